"""Assemble generated bindings, hand-written handlers and the pipeline, once per process."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kumitate.bindings import ResourceBinding, ServiceBinding
from kumitate.observability import tracing
from kumitate.pipeline import Pipeline, Policies
from kumitate.policies.ratelimit import RateLimiter, RedisRateLimiter
from kumitate.project import Project, load_generated, load_toolsets
from kumitate.service import ServiceSetup, Stores
from kumitate.serving.health import Health
from kumitate.settings import Settings
from kumitate.tasks import task_runner

if TYPE_CHECKING:
    from kumitate.policies.idempotency_store import IdempotencyStore
    from kumitate.tasks.runner import TaskRunner

__all__ = ["MissingHandlerError", "Runtime", "default_services"]


class MissingHandlerError(RuntimeError):
    """A tool or resource of the spec has no handler: fail at start-up, not on first call."""


def _check_handlers(svc: ServiceBinding, handlers: object) -> None:
    missing = [f"tool {t.name!r} (method {t.name})" for t in svc.tools if not callable(getattr(handlers, t.name, None))]
    missing += [
        f"{kind} {r.name!r} (method {r.method_name})"
        for kind, group in (("resource", svc.resources), ("prompt", svc.prompts))
        for r in group
        if not callable(getattr(handlers, r.method_name, None))
    ]
    if missing:
        raise MissingHandlerError(f"service {svc.name!r}: handlers/{svc.name} does not implement " + ", ".join(missing))


def default_services(registry: Mapping[str, ServiceBinding]) -> list[str]:
    """The services served when none are named: every one but those the spec marks `opt_in`."""
    return [name for name, svc in registry.items() if not svc.opt_in]


class Runtime:
    """Everything a transport needs: services, their handlers and the shared pipeline."""

    def __init__(
        self,
        settings: Settings,
        services: Iterable[str] | None = None,
        project: Project | None = None,
    ) -> None:
        """`services`: the services to serve (default: KUMITATE_SERVICES, else every service not `opt_in`);
        `project`: the project they come from (default: the one `settings` name, `Settings.load_project`).

        The project is activated first (`Project.activate`: its generated/ and handlers/ first on
        sys.path), before anything here imports `generated` or `handlers` by name."""
        self.project = (project or settings.load_project()).activate()
        catalogue, registry = load_generated()

        if services is None:
            services = settings.services
        wanted = list(services) if services is not None else default_services(registry)
        unknown = [s for s in wanted if s not in registry]
        if unknown:
            raise KeyError(f"unknown service(s): {', '.join(unknown)}; known: {', '.join(registry)}")
        self.settings = settings
        self.services: dict[str, ServiceBinding] = {name: registry[name] for name in wanted}
        self.toolsets: dict[str, tuple[str, ...]] = {
            name: kept
            for name, keys in load_toolsets().items()
            if (kept := tuple(k for k in keys if k.partition(".")[0] in self.services))
        }
        """Named toolsets (specs/toolsets.yaml), each cut to the services this runtime serves."""
        # The data directory exists whatever the services keep there (readiness probes it); the database
        # opens when the first service (or the idempotency store) asks, before that service loads anything.
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.stores = Stores.open(settings)
        handlers: dict[str, Any] = {}
        try:
            for name, svc in self.services.items():
                try:
                    setup = ServiceSetup(name, settings, self.stores)
                    handlers[name] = svc.create_handlers(setup)
                except ModuleNotFoundError as exc:
                    if (exc.name and exc.name.startswith(f"handlers.{name}")) or exc.name == "handlers":
                        tools = ", ".join(t.name for t in svc.tools)
                        raise MissingHandlerError(
                            f"service {name!r}: no module handlers/{name}; it must implement {tools}"
                        ) from exc
                    raise
                _check_handlers(svc, handlers[name])
        except BaseException:  # a failed start-up (a full disk mid-import) closes what it had opened
            _close_handlers(handlers)
            self.stores.close()
            raise
        self.handlers = handlers
        redis = self.stores.redis
        self.policies = Policies.from_settings(
            settings,
            self.services,
            limiter=RedisRateLimiter(redis) if redis is not None else RateLimiter(),
            idempotency=self._idempotency(),
        )
        disabled = {r.key for svc in self.services.values() for r in svc.resources if not self.resource_enabled(r)}
        self.pipeline = Pipeline(catalogue, self.services, handlers, self.policies, disabled=disabled)
        self._tasks: TaskRunner | None = None
        tracing.configure(settings.env)
        self.draining = threading.Event()
        """Set when this instance is going away (SIGTERM): /readyz answers 503 so the balancer stops
        sending it calls while those in flight finish."""
        self.health = Health(self)

    def _idempotency(self) -> IdempotencyStore | None:
        """The idempotency store, on the database, when a tool served declares `idempotency` (else None:
        no tool of these services takes a key, and the database need not open for it)."""
        if not any(t.policy.idempotency for svc in self.services.values() for t in svc.tools):
            return None
        from kumitate.policies.idempotency_store import IdempotencyStore

        return IdempotencyStore(self.stores.database, renewed_lease_s=self.settings.idempotency_lease_ms / 1000)

    def versions(self, services: Iterable[str] | None = None) -> dict[str, dict[str, str | None]]:
        """Server and policy version per service (public: health and version need no token)."""
        return {
            name: {
                "server_version": svc.versions.get("server_version", svc.version),
                "policy_version": svc.versions.get("policy_version"),
            }
            for name, svc in self.services.items()
            if services is None or name in services
        }

    def resource_enabled(self, binding: ResourceBinding) -> bool:
        """A resource the spec gates on a variable (`enabled_by`, a service's setting) is served when it is `1`."""
        return binding.enabled_by is None or self.settings.env.get(binding.enabled_by) == "1"

    @property
    def tasks(self) -> TaskRunner:
        """The task runner (kumitate.tasks), built on first use: a process whose services have no task
        tool opens no database for it (stdio for stays stays lean)."""
        if self._tasks is None:
            self._tasks = task_runner(self.pipeline, self.stores.database, self.settings)
        return self._tasks

    def close(self) -> None:
        """Release what the runtime opened: health checks, tasks, worker pools, the idempotency store, storage
        and what each service's handlers hold."""
        self.health.close()
        if self._tasks is not None:
            self._tasks.close()
        self.pipeline.close()
        if self.policies.idempotency is not None:
            self.policies.idempotency.close()
        self.stores.close()
        _close_handlers(self.handlers)


def _close_handlers(handlers: dict[str, Any]) -> None:
    for handler in handlers.values():
        close = getattr(handler, "close", None)
        if callable(close):
            close()
