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
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict, Unpack
from urllib.parse import quote

from pydantic import BaseModel

from kumitate.context import Attachment, CallContext, Principal
from kumitate.httpshape import HttpShape
from kumitate.policies.deprecation import Deprecation
from kumitate.policies.spec import Policy, allowed_codes

DEFAULT_TASK_TIMEOUT_MS = 600_000
"""A task body's deadline where the spec's `execution` names none (the meta-schema's default)."""

if TYPE_CHECKING:
    from datetime import datetime

    from kumitate.callstate import CallState
    from kumitate.service import ServiceSetup

__all__ = [
    "DEFAULT_TASK_TIMEOUT_MS",
    "Annotations",
    "Binding",
    "CacheHint",
    "Deprecation",
    "DirectFields",
    "Execution",
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
class Annotations:
    """A tool's spec `mcp.annotations`, by the MCP SDK's field names (mcp.types.ToolAnnotations): hints
    for a client about what the tool does, never enforced; None where the spec says nothing."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    SPEC_KEYS: ClassVar[dict[str, str]] = {
        "title": "title",
        "readOnlyHint": "read_only_hint",
        "destructiveHint": "destructive_hint",
        "idempotentHint": "idempotent_hint",
        "openWorldHint": "open_world_hint",
    }
    """Spec (and MCP wire) key -> field."""

    @classmethod
    def parse(cls, declared: Mapping[str, Any]) -> Annotations:
        """The record of a spec's `mcp.annotations` mapping."""
        return cls(**{field: declared[key] for key, field in cls.SPEC_KEYS.items() if key in declared})

    def declared(self) -> dict[str, Any]:
        """The hints the spec sets, by field name (what ToolAnnotations takes)."""
        return {field: value for field in self.SPEC_KEYS.values() if (value := getattr(self, field)) is not None}

    def as_spec(self) -> dict[str, Any]:
        """The hints the spec sets, by spec (and MCP wire) key: what a lint or a tools/list entry reads."""
        return {key: value for key, field in self.SPEC_KEYS.items() if (value := getattr(self, field)) is not None}


@dataclass(frozen=True, slots=True)
class CacheHint:
    """An MCP caching hint from the spec (`cache` on a resource, `mcp.cache` on a tool): how long a
    client may keep the answer, and whether a shared cache may (kumitate.transports.mcp.cache)."""

    ttl_ms: int
    scope: Literal["public", "private"] = "private"

    @classmethod
    def parse(cls, declared: Mapping[str, Any] | None) -> CacheHint | None:
        """The record of a spec's `cache` mapping (None: the spec has none, so 0 ms, private)."""
        if not declared:
            return None
        return cls(int(declared["ttl_ms"]), "public" if declared.get("scope") == "public" else "private")


@dataclass(frozen=True, slots=True)
class Execution:
    """A tool's spec `execution`: with `mode: task` a client may start it as a task (kumitate.tasks),
    whose body runs under `timeout_ms`; `required`: over MCP only as a task; `asks_first`: the keys of
    questions asked as rounds of the `tools/call` itself before the task starts (kumitate.tasks.mcp)."""

    mode: Literal["sync", "task"] = "sync"
    timeout_ms: int = DEFAULT_TASK_TIMEOUT_MS
    required: bool = False
    asks_first: tuple[str, ...] = ()

    @classmethod
    def parse(cls, declared: Mapping[str, Any] | None) -> Execution | None:
        """The record of a spec's `execution` mapping (None: the spec has none)."""
        if not declared:
            return None
        mode: Literal["sync", "task"] = "task" if declared.get("mode") == "task" else "sync"
        timeout_ms = int(declared.get("timeout_ms", DEFAULT_TASK_TIMEOUT_MS))
        return cls(mode, timeout_ms, bool(declared.get("required")), tuple(declared.get("asks_first", ())))


@dataclass(frozen=True, slots=True)
class Binding:
    """What a tool, resource and prompt binding share: a name within its service, the codes it declares
    and its policy (typed, as generated from the spec)."""

    service: str
    name: str
    errors: list[str]
    policy: Policy
    allowed: frozenset[str] = field(init=False, repr=False, compare=False)
    """Codes the handler may raise (kumitate.policies.spec.allowed_codes); any other answers INTERNAL."""
    _resource: ClassVar[bool] = False
    """A resource's read may also answer what only reads can (kumitate.policies.spec.allowed_codes)."""

    def __post_init__(self) -> None:
        allowed = allowed_codes(self.errors, self.policy, resource=self._resource)
        object.__setattr__(self, "allowed", allowed)  # frozen: set once, while the binding is built

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
    annotations: Annotations
    deprecated: Deprecation | None
    execution: Execution | None = None
    """Spec `execution`: a long tool a client may start as a task (kumitate.tasks)."""
    handler_input: str = "model"
    """`model`: the handler takes the generated input model; `data`: the validated JSON data (spec `handler_input`)."""
    inline_max_bytes: int | None = None
    """An HTTP call with a JSON body of at most this many bytes runs the (pure, synchronous) handler on
    the event loop, no thread hop (spec `inline_max_bytes`); None: always on the service's threads."""
    form_flatten: tuple[str, ...] = ()
    """Object properties whose own properties a form body may send as fields of their own (spec `http.form_flatten`)."""
    form_deep_objects: tuple[str, ...] = ()
    """Object properties a form body sends in OpenAPI's deepObject style, `to[name]=...` (spec `http.form_deep_objects`)."""
    requires_client: tuple[str, ...] = ()
    """MCP client capabilities the tool cannot run without (spec `mcp.requires_client`): -32021 without them."""
    text_content: str | None = None
    """The output property whose value is a success's MCP text content, not the result's JSON (spec `mcp.text_content`)."""
    schema_check: bool = True
    """Run the JSON Schema check on the success path: always for `data`; for `model` only where the
    model does not express the whole schema (codegen/fidelity.py)."""
    cache: CacheHint | None = None
    """MCP caching hint of the tool's listing (spec `mcp.cache`); None: 0, private."""
    http_shape: HttpShape = field(default_factory=HttpShape)
    """Where the input and output travel over HTTP (spec `http` params, body, status, response_*);
    the default: the input is the JSON body, the output a 200's body (kumitate.httpshape)."""

    @property
    def task_timeout_s(self) -> float | None:
        """The task body's own deadline when the spec lets the tool run as a task, else None."""
        if self.execution is None or self.execution.mode != "task":
            return None
        return self.execution.timeout_ms / 1000

    @property
    def task_required(self) -> bool:
        """Over MCP the tool runs only as a task (spec `execution.required`): -32021 for a client without the extension."""
        return self.task_timeout_s is not None and self.execution is not None and self.execution.required


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
    cache: CacheHint | None = None
    """MCP caching hint of the resource's reads (spec `cache`); None: 0, private."""
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


class DirectFields(TypedDict, total=False):
    """What `ServiceBinding.direct_call` may set of the context it builds: `CallContext`'s own
    parameters, but for the service, tool, base address and routes the binding gives."""

    transport: str
    run_id: str
    trace_id: str
    principal: Principal | None
    received_at: datetime | None
    warnings: list[str] | None
    attachments: list[Attachment] | None
    deadline: float | None
    state: CallState | None
    credentials: str | None


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

    def direct_call(
        self, tool: str, public_url: str = "http://127.0.0.1:8000", **fields: Unpack[DirectFields]
    ) -> CallContext:
        """The context of a handler called directly (tests, benchmarks, scripts), as the pipeline builds
        one: this service's routes and a base address for `url_for`; `fields` set the rest (principal, deadline)."""
        values: DirectFields = {"transport": "direct", "run_id": "direct", "trace_id": "direct"}
        values.update(fields)
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
