"""The one invocation pipeline every transport calls.

correlation ids -> authenticate / authorize -> rate limit -> idempotency -> input
validation (JSON Schema semantics) -> handler (with its deadline) -> output
validation (fail closed) -> output-size guard -> success envelope -> one log line.
Adapters only translate the wire format into a `CallRequest` and an `Outcome`
back, so a tool behaves the same on MCP and HTTP.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pydantic import BaseModel

from kumitate import calllog, correlation, faults, tracing
from kumitate.bindings import ResourceBinding, ServiceBinding, ToolBinding
from kumitate.catalogue import CatalogueEntry
from kumitate.context import Asker, Attachment, CallContext, Principal, ProgressSink, bound
from kumitate.errors import ToolError
from kumitate.intake import MAX_REPORTED_ERRORS, Intake, data_of
from kumitate.metrics import Metrics
from kumitate.policies import deprecation, discovery, guard
from kumitate.policies.auth import Authenticator, AuthError
from kumitate.policies.authguard import AuthGuard
from kumitate.policies.idempotency import IdempotencyStore, Stored
from kumitate.policies.ratelimit import RateLimiter


@dataclass(slots=True)
class CallRequest:
    """What an adapter knows about a call, transport-neutral."""

    transport: str
    headers: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] | None = None
    ids: tuple[str, str] | None = None
    client: str | None = None
    authorization: str | None = None
    local: bool = False
    """stdio / in-memory MCP: no network peer, runs as the configured local principal."""
    idempotency_key: str | None = None
    base_url: str | None = None
    """`scheme://host[:port]` the caller used (HTTP and MCP over HTTP); None over stdio."""
    progress: ProgressSink | None = None
    """Where the handler's `CallContext.progress` reports go, when the caller asked for them."""
    asker: Asker | None = None
    """How `CallContext.ask` reaches the user, when the transport and the client can ask."""


@dataclass(slots=True)
class Outcome:
    """A call's result: a success body or an error envelope, with its status."""

    ok: bool
    status: int
    code: str
    body: Any
    run_id: str
    trace_id: str
    retryable: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    media_type: str = "application/json"
    replayed: bool = False


@dataclass(slots=True)
class Policies:
    auth: Authenticator = field(default_factory=lambda: Authenticator([], Principal("local", frozenset({"*"}))))
    limiter: RateLimiter = field(default_factory=RateLimiter)
    idempotency: IdempotencyStore | None = None
    auth_guard: AuthGuard | None = None
    """Failed authentication rate-limited per client address (KUMITATE_AUTH_FAILURES)."""
    public_url: str | None = None
    """KUMITATE_PUBLIC_URL: when set, every URL a tool returns starts with it; else each call's own address."""
    max_timeout_ms: int | None = None
    """Operator cap on every tool's deadline (KUMITATE_MAX_TIMEOUT_MS), e.g. under a proxy's own time-out."""
    worker_threads: int = 40
    """Sync handlers running at once (KUMITATE_WORKER_THREADS). asyncio's default pool is
    min(32, CPUs + 4), six threads on a small machine: six slow queries would queue every
    other call behind them, and a timed-out worker, which cannot be interrupted, keeps its
    thread until it returns. 40 matches the thread limit anyio gives Litestar's sync routes."""


def _json_data(result: Any) -> Any:
    """A handler's result as JSON data: a generated model is dumped once, here; data passes as it is."""
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return result


def _client_caused(outcome: Outcome) -> bool:
    """Whether an idempotency key may keep this outcome: a success, or a refusal the client
    caused (4xx, not retryable). A server fault (5xx, INTERNAL, STORAGE_UNAVAILABLE) or a
    time-out (408, retryable or not) releases the key, so a retry runs instead of replaying it."""
    return outcome.ok or (400 <= outcome.status < 500 and outcome.status != 408 and not outcome.retryable)


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve a worker's exception after a time-out, so asyncio does not log it as lost."""
    if not future.cancelled():
        future.exception()


class Pipeline:
    def __init__(
        self,
        catalogue: Mapping[str, CatalogueEntry],
        services: Mapping[str, ServiceBinding],
        handlers: Mapping[str, Any],
        policies: Policies | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.services = services
        self.handlers = handlers
        self.policies = policies or Policies()
        self.disabled: set[str] = set()
        """Keys of opt-in resources not enabled here: NOT_FOUND, after auth like any other route."""
        self.intake = Intake()
        self._workers = ThreadPoolExecutor(self.policies.worker_threads, thread_name_prefix="kumitate-handler")
        self.metrics = Metrics(queue_depth=lambda: self._workers._work_queue.qsize())

    def close(self) -> None:
        """Stop taking sync work; calls already running finish on their own threads."""
        self._workers.shutdown(wait=False, cancel_futures=True)

    # -- helpers ---------------------------------------------------------------------------
    def error_outcome(self, exc: ToolError, run_id: str, trace_id: str) -> Outcome:
        if exc.code != "STORAGE_UNAVAILABLE" and faults.storage_failure(exc) is not None:
            exc = faults.storage_error()  # a handler's own code for it (SQL_ERROR, NOT_FOUND) would mislead
        entry = self.catalogue.get(exc.code) or self.catalogue["INTERNAL"]
        error: dict[str, Any] = {"code": entry.code, "message": exc.message, "retryable": entry.retryable}
        error.update(exc.details)
        headers = dict(exc.headers)
        if entry.code == "UNAUTHORIZED":  # RFC 6750 section 3: a 401 names its scheme
            headers.setdefault("WWW-Authenticate", discovery.www_authenticate({}, None))
        if "retry_after_ms" in exc.details:
            headers["Retry-After"] = str(max(1, -(-int(exc.details["retry_after_ms"]) // 1000)))
        return Outcome(
            ok=False,
            status=entry.status,
            code=entry.code,
            body={"error": error, "run_id": run_id, "trace_id": trace_id},
            run_id=run_id,
            trace_id=trace_id,
            retryable=entry.retryable,
            headers=headers,
        )

    def _context(self, service: str, name: str, request: CallRequest) -> CallContext:
        if request.ids is not None and request.meta is None:
            run_id, trace_id = request.ids
        else:
            run_id, trace_id = correlation.from_meta(request.meta, request.ids)
        return CallContext(
            service=service,
            tool=name,
            transport=request.transport,
            run_id=run_id,
            trace_id=trace_id,
            principal=Principal(),
            public_url=self.policies.public_url or request.base_url,
            progress_sink=request.progress,
            asker=request.asker,
        )

    def _envelope(self, service: str, body: dict[str, Any], ctx: CallContext) -> dict[str, Any]:
        svc = self.services[service]
        if not svc.success_envelope:
            return body
        values = {"run_id": ctx.run_id, "trace_id": ctx.trace_id, **svc.versions}
        return {**body, **{k: values[k] for k in svc.success_envelope if k in values}}

    def _check_output(self, schema: dict[str, Any] | None, body: Any, ctx: CallContext) -> None:
        if schema is None:
            return
        validator = self.intake.validator(schema)
        if validator.is_valid(body):
            return
        errors = list(validator.iter_errors(body))
        if errors:
            paths = ["/" + "/".join(str(p) for p in e.instance_path) for e in errors[:MAX_REPORTED_ERRORS]]
            calllog.log_event("output_invalid", service=ctx.service, tool=ctx.tool, run_id=ctx.run_id, paths=paths)
            raise ToolError("the tool produced an invalid result; it was not sent", code="INTERNAL")

    async def _run(
        self, name: str, policy: Mapping[str, Any], ctx: CallContext, method: Any, *args: Any, **kw: Any
    ) -> Any:
        """The handler under its deadline, as a task (async handler) or in a worker thread (sync).

        At the deadline the call is timed out unless the handler holds its commit gate
        (`CallContext.committing`): then the commit finishes and its result is sent, so a
        client is never told "nothing was committed" about a change that was. This holds for
        both kinds of handler: an async one may commit in a thread that cancelling it would
        not stop. A timed-out task is cancelled; a worker thread cannot be interrupted, but
        its commit gate now refuses. The same when the caller goes away (MCP notifications/cancelled,
        a closed connection): the task is cancelled, and a thread's gate refuses and its next
        `ctx.progress` raises, so a cancelled call saves nothing."""
        timeout = self._timeout_s(policy)
        ctx.deadline = time.monotonic() + timeout if timeout else None
        with bound(ctx):
            future: asyncio.Future[Any]
            if inspect.iscoroutinefunction(method):
                future = asyncio.ensure_future(method(*args, **kw))  # the task copies the bound context
            else:
                # a plain executor: about half the hop cost of anyio.to_thread here
                call = partial(contextvars.copy_context().run, method, *args, **kw)
                future = asyncio.get_running_loop().run_in_executor(self._workers, call)
            future.add_done_callback(_consume)
            try:
                done, _ = await asyncio.wait({future}, timeout=timeout)
            except asyncio.CancelledError:
                stopped = ctx.cancel()  # the caller went away: a worker thread's commit gate refuses from now on
                future.cancel()  # and an async handler is stopped
                where = {"service": ctx.service, "tool": ctx.tool, "run_id": ctx.run_id}
                calllog.log_event("call_cancelled", **where, committed=not stopped)
                raise
            if not done and ctx.time_out():
                future.cancel()
                raise ToolError(
                    f"{name} did not finish within {round((timeout or 0) * 1000)} ms; nothing was committed",
                    code="REQUEST_TIMEOUT",
                )
            result = await future
            if inspect.isawaitable(result):
                result = await result
            return result

    def _timeout_s(self, policy: Mapping[str, Any]) -> float | None:
        """The tool's declared deadline, capped by the operator's KUMITATE_MAX_TIMEOUT_MS."""
        declared = policy.get("timeout_ms")
        cap = self.policies.max_timeout_ms
        ms = min(declared, cap) if declared and cap else declared or cap
        return ms / 1000 if ms else None

    def _finish(self, outcome: Outcome, ctx: CallContext, transport: str, started: float) -> Outcome:
        seconds = time.perf_counter() - started
        self.metrics.observe(ctx.service, ctx.tool, transport, outcome.code, seconds, replayed=outcome.replayed)
        calllog.log_call(
            service=ctx.service,
            tool=ctx.tool,
            transport=transport,
            run_id=ctx.run_id,
            trace_id=ctx.trace_id,
            principal=ctx.principal.id,
            outcome=outcome.code,
            status=outcome.status,
            duration_ms=round(seconds * 1000, 2),
        )
        return outcome

    def _unexpected(self, exc: BaseException, ctx: CallContext) -> ToolError:
        """The last resort: an exception no handler caught. A storage failure or an input number
        out of machine range gets its catalogued code (faults.classify) and one log line;
        anything else is a bug: INTERNAL, logged with its traceback, never in the body."""
        known = faults.classify(exc)
        where = {"service": ctx.service, "tool": ctx.tool, "run_id": ctx.run_id}
        if known is not None:
            if known.code == "STORAGE_UNAVAILABLE":  # the operator's problem: say which layer failed
                calllog.log_event("storage_failed", **where, error_type=faults.describe(exc))
            return known
        calllog.log_crash("handler_crashed", exc, **where)
        return ToolError(f"internal error; quote run_id {ctx.run_id}", code="INTERNAL")

    def _admit(
        self, service: str, name: str, policy: Mapping[str, Any], ctx: CallContext, request: CallRequest
    ) -> None:
        """Authenticate, authorize and rate-limit: the checks before any work is done. The async
        callers first await `auth.prepare` (an identity provider's keys, fetched off the loop)."""
        auth = self.policies.auth
        public = bool(policy.get("public"))
        try:
            if self.policies.auth_guard is not None:
                ctx.principal = self.policies.auth_guard.authenticate(
                    auth, request.authorization, request.client, local=request.local, public=public
                )
            else:
                ctx.principal = auth.authenticate(request.authorization, local=request.local, public=public)
            if not policy.get("public"):
                auth.authorize(ctx.principal, policy.get("scopes"))
        except AuthError as exc:
            exc.headers["WWW-Authenticate"] = discovery.www_authenticate(exc.challenge, self._metadata_url(request))
            raise
        limit = policy.get("rate_limit")
        if limit:
            who = ctx.principal.id if ctx.principal.id != "anonymous" else f"addr:{request.client or 'unknown'}"
            self.policies.limiter.take((f"{service}.{name}", who), float(limit["rps"]), int(limit["burst"]))

    def _metadata_url(self, request: CallRequest) -> str | None:
        """Where a refused client finds how to log in (RFC 9728), while OAuth is configured."""
        base = self.policies.public_url or request.base_url
        if self.policies.auth.oauth is None or base is None:
            return None
        return discovery.metadata_url(base, request.transport)

    async def admit_connection(self, request: CallRequest, scopes: list[str] | None = None) -> Outcome | None:
        """Admission of a connection before any tool is named (MCP over HTTP while OAuth is on):
        None for a valid token, else the 401 (or 429) whose challenge starts the client's login;
        with `scopes` (those of the tool a request names), a token without them gets the 403."""
        started = time.perf_counter()
        ctx = self._context("-", "connect", request)
        try:
            await self.policies.auth.prepare(request.authorization)
            self._admit("-", "connect", {"scopes": scopes or []}, ctx, request)
        except ToolError as exc:
            return self._finish(self.error_outcome(exc, ctx.run_id, ctx.trace_id), ctx, request.transport, started)
        return None

    def _guard(self, binding: ToolBinding, body: Any, ctx: CallContext) -> Any:
        limit = binding.policy.get("max_output_bytes")
        if not limit:
            return body
        in_body = isinstance(body, dict) and "warnings" in binding.output_schema.get("properties", {})
        # room for the warning added below (an upper bound: the key may already be there)
        reserve = guard.size_of({"warnings": [guard.TRIM_WARNING.format(limit=limit)]}) if in_body else 0
        body, warning = guard.enforce(
            body, int(limit), binding.policy.get("on_oversize", "fail"), binding.name, reserve=reserve
        )
        if warning:
            if in_body:
                body["warnings"] = [*body.get("warnings", []), warning]
            else:
                ctx.warnings.append(warning)
            self._check_output(binding.output_schema, body, ctx)
        return body

    async def _execute(self, binding: ToolBinding, arguments: Any, ctx: CallContext) -> Outcome:
        try:
            with tracing.stage("validate"):
                handler_input = self.intake.prepare(binding, arguments)
            method = getattr(self.handlers[binding.service], binding.name)
            with tracing.stage("handler"):
                result = await self._run(binding.name, binding.policy, ctx, method, handler_input, ctx)
            with tracing.stage("output"):
                body = _json_data(result)
                body = self._envelope(binding.service, body, ctx) if isinstance(body, dict) else body
                self._check_output(binding.output_schema, body, ctx)
                body = self._guard(binding, body, ctx)
            return Outcome(
                True, 200, "OK", body, ctx.run_id, ctx.trace_id, attachments=ctx.attachments, warnings=ctx.warnings
            )
        except ToolError as exc:
            return self.error_outcome(exc, ctx.run_id, ctx.trace_id)
        except Exception as exc:
            return self.error_outcome(self._unexpected(exc, ctx), ctx.run_id, ctx.trace_id)

    async def _idempotent(self, binding: ToolBinding, arguments: Any, ctx: CallContext, key: str) -> Outcome:
        store = self.policies.idempotency
        if store is None:
            return await self._execute(binding, arguments, ctx)
        holder: list[Outcome] = []

        async def execute() -> tuple[Stored, bool]:
            outcome = await self._execute(binding, arguments, ctx)
            holder.append(outcome)
            return Stored(outcome.status, outcome.body), _client_caused(outcome)

        ttl = int(binding.policy.get("idempotency_ttl_s", 86400))
        stored, replayed = await store.run((binding.key, ctx.principal.id, key), arguments, ttl, execute)
        if not replayed:
            return holder[0]
        ok = stored.status < 400
        code = "OK" if ok else str(stored.body.get("error", {}).get("code", "INTERNAL"))
        # the replay is this call: its body carries this call's ids (where the body has ids), like its headers
        ids = {"run_id": ctx.run_id, "trace_id": ctx.trace_id}
        body = stored.body
        if isinstance(body, dict):
            body = {**body, **{k: v for k, v in ids.items() if k in body}}
        return Outcome(
            ok,
            stored.status,
            code,
            body,
            ctx.run_id,
            ctx.trace_id,
            replayed=True,
            retryable=False if ok else bool(stored.body["error"].get("retryable")),
        )

    # -- entry points ----------------------------------------------------------------------
    async def call_tool(
        self,
        binding: ToolBinding,
        arguments: Any,
        request: CallRequest,
        *,
        read: Callable[[], Awaitable[Any]] | None = None,
    ) -> Outcome:
        """Run one tool call (see `_call_tool`), counted as in flight while it runs, in its span."""
        with (
            self.metrics.running(binding.service, binding.name),
            tracing.call(binding.key, request.transport, request.headers, request.meta) as span,
        ):
            outcome = await self._call_tool(binding, arguments, request, read=read)
            tracing.finish(span, outcome.run_id, outcome.trace_id, outcome.code, outcome.status)
            return outcome

    async def read_resource(self, binding: ResourceBinding, params: Mapping[str, str], request: CallRequest) -> Outcome:
        """Read one resource (see `_read_resource`), counted as in flight while it runs, in its span."""
        with (
            self.metrics.running(binding.service, binding.name),
            tracing.call(binding.key, request.transport, request.headers, request.meta) as span,
        ):
            outcome = await self._read_resource(binding, params, request)
            tracing.finish(span, outcome.run_id, outcome.trace_id, outcome.code, outcome.status)
            return outcome

    async def _call_tool(
        self,
        binding: ToolBinding,
        arguments: Any,
        request: CallRequest,
        *,
        read: Callable[[], Awaitable[Any]] | None = None,
    ) -> Outcome:
        """Run one tool call. `read`, when given, produces the arguments and is awaited only after
        the caller is admitted: an HTTP body is not read or parsed for a caller without a valid
        token (or over its rate limit), so such a caller gets 401/403/429, never 400/413/415."""
        started = time.perf_counter()
        ctx = self._context(binding.service, binding.name, request)
        try:
            with tracing.stage("admit"):
                await self.policies.auth.prepare(request.authorization)
                self._admit(binding.service, binding.name, binding.policy, ctx, request)
            if read is not None:
                arguments = await read()
            if binding.policy.get("idempotency") and request.idempotency_key is not None:
                outcome = await self._idempotent(binding, data_of(arguments), ctx, request.idempotency_key)
            else:
                outcome = await self._execute(binding, arguments, ctx)
        except ToolError as exc:
            outcome = self.error_outcome(exc, ctx.run_id, ctx.trace_id)
        except Exception as exc:  # e.g. reading the body, or the idempotency store's disk
            outcome = self.error_outcome(self._unexpected(exc, ctx), ctx.run_id, ctx.trace_id)
        if binding.deprecated:
            outcome.headers.update(deprecation.headers(binding.deprecated))
            note = deprecation.warning(binding.name, binding.deprecated)
            if note:
                outcome.warnings.append(note)
        if outcome.replayed:
            outcome.headers["Idempotent-Replayed"] = "true"
        return self._finish(outcome, ctx, request.transport, started)

    async def complete(
        self, binding: ResourceBinding, source: str, prefix: str, arguments: Mapping[str, str], request: CallRequest
    ) -> list[str]:
        """Values for a resource parameter (MCP completion/complete) from the handlers'
        `complete_<source>`, as the caller: admitted like a read of the resource, and nothing
        (an empty list, not an error) for a caller who may not read it."""
        ctx = self._context(binding.service, f"complete_{source}", request)
        try:
            await self.policies.auth.prepare(request.authorization)
            self._admit(binding.service, binding.name, binding.policy, ctx, request)
            if binding.key in self.disabled:
                return []
            method = getattr(self.handlers[binding.service], f"complete_{source}")
            values = await self._run(ctx.tool, binding.policy, ctx, method, ctx, prefix, dict(arguments))
        except ToolError:
            return []
        except Exception as exc:
            self._unexpected(exc, ctx)
            return []
        return [v for v in values if isinstance(v, str)]

    def refuse(self, what: str, error: ToolError, request: CallRequest) -> Outcome:
        """A request no tool or resource takes (`what`: e.g. `unknown_tool`; the name asked for is
        not logged). The caller is still authenticated first: without a valid token it learns nothing."""
        service, name = "-", what
        started = time.perf_counter()
        ctx = self._context(service, name, request)
        try:
            self._admit(service, name, {}, ctx, request)
        except ToolError as exc:
            error = exc
        return self._finish(self.error_outcome(error, ctx.run_id, ctx.trace_id), ctx, request.transport, started)

    async def _read_resource(
        self, binding: ResourceBinding, params: Mapping[str, str], request: CallRequest
    ) -> Outcome:
        started = time.perf_counter()
        ctx = self._context(binding.service, binding.name, request)
        try:
            with tracing.stage("admit"):
                await self.policies.auth.prepare(request.authorization)
                self._admit(binding.service, binding.name, binding.policy, ctx, request)
            if binding.key in self.disabled:
                raise ToolError(f"resource {binding.uri} is not enabled on this server", code="NOT_FOUND")
            method = getattr(self.handlers[binding.service], binding.method_name)
            with tracing.stage("handler"):
                result = await self._run(binding.name, binding.policy, ctx, method, ctx, **params)
            if binding.is_json:
                body = _json_data(result)
                body = self._envelope(binding.service, body, ctx) if isinstance(body, dict) else body
                self._check_output(binding.output_schema, body, ctx)
                outcome = Outcome(True, 200, "OK", body, ctx.run_id, ctx.trace_id)
            else:
                media_type = binding.mime_type
                if isinstance(result, Attachment):  # the handler knows the exact type (csv vs parquet export)
                    media_type, result = result.mime_type, result.data
                if not isinstance(result, bytes | bytearray):
                    raise TypeError(f"resource {binding.name} must return bytes")
                outcome = Outcome(True, 200, "OK", bytes(result), ctx.run_id, ctx.trace_id, media_type=media_type)
        except ToolError as exc:
            outcome = self.error_outcome(exc, ctx.run_id, ctx.trace_id)
        except Exception as exc:
            outcome = self.error_outcome(self._unexpected(exc, ctx), ctx.run_id, ctx.trace_id)
        return self._finish(outcome, ctx, request.transport, started)
