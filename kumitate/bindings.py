"""The data generated code hands to the runtime: services, tools, resources.

Generated `bindings.py` modules build these from the spec; both transports are
assembled from them, so a tool's wire surface is decided by the spec alone.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

from pydantic import BaseModel

from kumitate.context import CallContext
from kumitate.policy import Policy, allowed_codes

DEFAULT_TASK_TIMEOUT_MS = 600_000
"""A task body's deadline where the spec's `execution` names none (the meta-schema's default)."""

if TYPE_CHECKING:
    from kumitate.service import ServiceSetup

__all__ = [
    "DEFAULT_TASK_TIMEOUT_MS",
    "Binding",
    "PromptBinding",
    "ResourceBinding",
    "ServiceBinding",
    "ServiceRegistry",
    "ToolBinding",
    "fill_path",
    "load_schemas",
]


def load_schemas(path: Path) -> dict[str, Any]:
    """Read a generated schemas.json (dereferenced input/output schemas and texts)."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@dataclass(frozen=True, slots=True)
class Binding:
    """What a tool, resource and prompt binding share: a name within its service, the codes it declares
    and its policy, parsed once (at registry load) for the request path."""

    service: str
    name: str
    errors: list[str]
    policy: dict[str, Any]
    rules: Policy = field(init=False, repr=False, compare=False)
    """`policy`, parsed once here: what the request path reads."""
    allowed: frozenset[str] = field(init=False, repr=False, compare=False)
    """Codes the handler may raise (kumitate.policy.allowed_codes); any other answers INTERNAL."""
    _resource: ClassVar[bool] = False
    """A resource's read may also answer what only reads can (kumitate.policy.allowed_codes)."""

    def __post_init__(self) -> None:
        rules = Policy.parse(self.policy)
        object.__setattr__(self, "rules", rules)  # frozen: set once, while the binding is built
        object.__setattr__(self, "allowed", allowed_codes(self.errors, rules, resource=self._resource))

    @property
    def key(self) -> str:
        """`service.name`: the tool's, resource's or prompt's name across the whole server (metrics, handler lookup)."""
        return f"{self.service}.{self.name}"


@dataclass(frozen=True, slots=True)
class ToolBinding(Binding):
    """Everything the runtime needs to serve one tool, as generated from its spec: schemas, models,
    routes, policy, annotations. Transports read it; nothing about a tool is decided elsewhere."""

    summary: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    input_model: type[BaseModel]
    http_method: str
    http_path: str
    content_types: list[str]
    annotations: dict[str, Any]
    deprecated: dict[str, Any] | None
    execution: dict[str, Any] | None = None
    """Spec `execution` (`{mode: task, timeout_ms}`): a long tool a client may start as a task (kumitate.tasks)."""
    handler_input: str = "model"
    """`model`: the handler takes the generated input model; `data`: the validated JSON data (spec `handler_input`)."""
    inline_max_bytes: int | None = None
    """An HTTP call with a JSON body of at most this many bytes runs the (pure, synchronous) handler on
    the event loop, no thread hop (spec `inline_max_bytes`); None: always on the service's threads."""
    form_flatten: tuple[str, ...] = ()
    """Object properties whose own properties a form body may send as fields of their own (spec `http.form_flatten`)."""
    requires_client: tuple[str, ...] = ()
    """MCP client capabilities the tool cannot run without (spec `mcp.requires_client`): -32021 without them."""
    text_content: str | None = None
    """The output property whose value is a success's MCP text content, not the result's JSON (spec `mcp.text_content`)."""
    schema_check: bool = True
    """Run the JSON Schema check on the success path: always for `data`; for `model` only where the
    model does not express the whole schema (codegen/fidelity.py)."""
    cache: dict[str, Any] | None = None
    """MCP caching hint of the tool's listing, `{ttl_ms, scope}` (spec `mcp.cache`); None: 0, private."""

    @property
    def task_timeout_s(self) -> float | None:
        """The task body's own deadline when the spec lets the tool run as a task, else None."""
        if not self.execution or self.execution.get("mode") != "task":
            return None
        return int(self.execution.get("timeout_ms", DEFAULT_TASK_TIMEOUT_MS)) / 1000

    @property
    def task_required(self) -> bool:
        """Over MCP the tool runs only as a task (spec `execution.required`): -32021 for a client without the extension."""
        return self.task_timeout_s is not None and bool(self.execution and self.execution.get("required"))


def fill_path(template: str, params: Mapping[str, str]) -> str:
    """A spec route (`/api/charts/{chart_id}`) with each `{name}` replaced by its percent-encoded value."""
    for name, value in params.items():
        template = template.replace(f"{{{name}}}", quote(value, safe=""))
    return template


@dataclass(frozen=True, slots=True)
class ResourceBinding(Binding):
    """One resource of a service's spec: its URI template, HTTP route, MIME type and output schema."""

    uri: str
    params: list[str]
    summary: str
    description: str
    mime_type: str
    output_schema: dict[str, Any] | None
    http_path: str
    enabled_by: str | None
    cache: dict[str, Any] | None = None
    """MCP caching hint of the resource's reads, `{ttl_ms, scope}` (spec `cache`); None: 0, private."""
    _resource: ClassVar[bool] = True

    @property
    def is_json(self) -> bool:
        """Whether the resource answers JSON (so its result is validated and served as structured content)."""
        return self.mime_type == "application/json" or self.mime_type.endswith("+json")

    @property
    def method_name(self) -> str:
        """The handler method that reads it (`read_<name>`), as the generated Protocol declares it."""
        return f"read_{self.name}"

    def url(self, base: str, **params: str) -> str:
        """The resource's HTTP address under `base`: the spec's route with `params` filled in."""
        return base.rstrip("/") + fill_path(self.http_path, params)


@dataclass(frozen=True, slots=True)
class PromptBinding(Binding):
    """A prompt (specs/<service>/prompts/): rendered by the handler method `prompt_<name>`."""

    title: str
    description: str
    arguments: list[dict[str, Any]]
    """`{name, description, required}` each; every value is a string."""

    @property
    def method_name(self) -> str:
        """The handler method that renders it (`prompt_<name>`), as the generated Protocol declares it."""
        return f"prompt_{self.name}"


@dataclass(frozen=True, slots=True)
class ServiceBinding:
    """One service as generated from specs/<service>/: its metadata and every tool, resource and prompt binding."""

    name: str
    title: str
    version: str
    description: str
    instructions: str
    versions: dict[str, str]
    success_envelope: list[str]
    tools: tuple[ToolBinding, ...]
    resources: tuple[ResourceBinding, ...]
    create_handlers: Callable[[ServiceSetup], Any]
    prompts: tuple[PromptBinding, ...] = ()
    opt_in: bool = False
    """Served only where KUMITATE_SERVICES names it, never by default (spec `opt_in`)."""
    routes: Mapping[str, ResourceBinding] = field(init=False, repr=False, compare=False)
    """The resources by name: where `CallContext.url_for` finds a route."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "routes", {r.name: r for r in self.resources})

    def direct_call(self, tool: str, public_url: str = "http://127.0.0.1:8000", **fields: Any) -> CallContext:
        """The context of a handler called directly (tests, benchmarks, scripts), as the pipeline builds
        one: this service's routes and a base address for `url_for`; `fields` set the rest (principal, deadline)."""
        values: dict[str, Any] = {"transport": "direct", "run_id": "direct", "trace_id": "direct"} | fields
        return CallContext(service=self.name, tool=tool, public_url=public_url, routes=self.routes, **values)


class ServiceRegistry(Mapping[str, ServiceBinding]):
    """Service name -> its ServiceBinding, the generated `bindings` module (and the models it
    imports) imported on first lookup: listing the names loads nothing."""

    def __init__(self, modules: Mapping[str, str]) -> None:
        self._modules = dict(modules)
        self._loaded: dict[str, ServiceBinding] = {}

    def __getitem__(self, name: str) -> ServiceBinding:
        if name not in self._loaded:
            binding: ServiceBinding = importlib.import_module(self._modules[name]).SERVICE
            self._loaded[name] = binding
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)
