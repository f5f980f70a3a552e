"""Load the spec tree into typed objects, collecting every problem on the way.

Loading never stops at the first bad file: each file is validated against its
meta-schema (specs/_meta), each `$ref` is resolved locally, and every failure is
recorded as a Problem with its file, JSON pointer and rule ID. The lint rules
(codegen/lint.py) then run on whatever loaded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from codegen import advertised, naming, shared
from codegen.refs import RefError, clear_cache, dereference, load_document, resolve
from kumitate.bindings import Annotations
from kumitate.httpshape import HttpShape
from kumitate.policies.deprecation import Deprecation
from kumitate.policies.spec import GENERIC_CODES, Policy

T = TypeVar("T")

GENERIC_ERRORS: tuple[str, ...] = tuple(sorted(GENERIC_CODES))
"""Codes every tool may return without declaring them: the runtime's (kumitate.policies.spec.GENERIC_CODES)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding of the spec lint: the file, the JSON pointer in it, the rule id and the message."""

    file: str
    pointer: str
    rule: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}#{self.pointer or '/'}: [{self.rule}] {self.message}"


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One entry of specs/errors.yaml: the code, its HTTP status, whether to retry, and its text."""

    code: str
    status: int
    retryable: bool
    title: str
    description: str


@dataclass(slots=True)
class Example:
    """One example of a tool spec: an input and the output (or error code) it must give; `match` says
    whether the output must be exact or a subset."""

    name: str
    input: Any
    output: Any = None
    error: str | None = None
    match: str = "exact"
    description: str = ""


@dataclass(frozen=True, slots=True)
class Link:
    """A workflow step (a tool's or resource's `links` entry): call `target` next, with `fields`
    (target input field or URI parameter -> a path into this result, or `$input.<field>`)."""

    kind: str
    """`tool` or `resource`."""
    target: str
    fields: tuple[tuple[str, str], ...] = ()
    description: str = ""


def _links(doc: dict[str, Any]) -> list[Link]:
    return [
        Link(
            "tool" if "tool" in entry else "resource",
            entry.get("tool") or entry["resource"],
            tuple(sorted((entry.get("fields") or {}).items())),
            entry.get("description", ""),
        )
        for entry in doc.get("links", [])
    ]


@dataclass(slots=True)
class _Operation:
    """What a tool spec and a resource spec share: one operation of a service's HTTP API, with its texts,
    the codes it declares, its policy and the file it was read from."""

    service: str
    name: str
    summary: str
    description: str
    errors: list[str]
    policy: dict[str, Any]
    source: Path
    raw: dict[str, Any]

    @property
    def rules(self) -> Policy:
        """`policy` typed, as the runtime parses it (kumitate.policies.spec.Policy): what codegen reads."""
        return Policy.parse(self.policy)

    @property
    def operation_id(self) -> str:
        """The OpenAPI operationId of the tool or resource."""
        return naming.operation_id(self.service, self.name)


@dataclass(slots=True)
class ToolSpec(_Operation):
    """One tool as read from specs/<service>/tools/<tool>.yaml, with its $refs resolved."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    http_method: str
    http_path: str
    content_types: list[str]
    annotations: Annotations
    deprecated: Deprecation | None
    examples: list[Example]
    handler_input: str = "model"
    handler_output: str = "model"
    inline_max_bytes: int | None = None
    wire_input: dict[str, Any] = field(default_factory=dict)
    """input_schema as MCP advertises it and the pipeline checks it: repeats as local $defs (codegen.shared)."""
    wire_output: dict[str, Any] = field(default_factory=dict)
    form_flatten: list[str] = field(default_factory=list)
    """Object properties of the input whose own properties a form body may send as fields of their own."""
    form_deep_objects: list[str] = field(default_factory=list)
    """Object properties of the input a form body sends in OpenAPI's deepObject style (`to[name]=...`)."""
    requires_client: list[str] = field(default_factory=list)
    """MCP client capabilities the tool cannot run without (spec `mcp.requires_client`)."""
    text_content: str | None = None
    """The output property whose value is a success's MCP text content (spec `mcp.text_content`)."""
    cache: dict[str, Any] | None = None
    """`mcp.cache` (specs/_meta/cache.schema.json): the MCP caching hint of the tool's listing."""
    execution: dict[str, Any] | None = None
    """`execution` of the spec (`{mode: task, timeout_ms}`): a tool a client may start as a task."""
    links: list[Link] = field(default_factory=list)
    http_shape: HttpShape = field(default_factory=HttpShape)
    """Where the input and output travel over HTTP (spec `http` params, body, status, response_*)."""

    @property
    def is_task(self) -> bool:
        """Whether the tool may run as a task (`execution.mode: task`)."""
        return bool(self.execution and self.execution.get("mode") == "task")


@dataclass(slots=True)
class ResourceSpec(_Operation):
    """One resource as read from specs/<service>/resources/<resource>.yaml."""

    uri: str
    mime_type: str
    output_schema: dict[str, Any] | None
    http_path: str
    enabled_by: str | None
    also_mime_types: list[str] = field(default_factory=list)
    cache: dict[str, Any] | None = None
    """`cache` (specs/_meta/cache.schema.json): the MCP caching hint of the resource's reads."""
    links: list[Link] = field(default_factory=list)

    @property
    def params(self) -> list[str]:
        """The URI template's parameters, in order."""
        return naming.uri_params(self.uri)

    @property
    def is_json(self) -> bool:
        """Whether the resource is JSON (so it has an output schema and a generated model)."""
        return self.mime_type == "application/json" or self.mime_type.endswith("+json")


@dataclass(slots=True)
class PromptSpec:
    """A prompt (specs/<service>/prompts/<name>.yaml): MCP prompts/get, answered by `prompt_<name>`."""

    service: str
    name: str
    title: str
    summary: str
    description: str
    arguments: list[dict[str, Any]]
    errors: list[str]
    policy: dict[str, Any]
    source: Path

    @property
    def rules(self) -> Policy:
        """`policy` typed, as the runtime reads it (kumitate.policies.spec.Policy)."""
        return Policy.parse(self.policy)

    @property
    def method(self) -> str:
        """The handler method that renders the prompt."""
        return naming.prompt_method(self.name)


@dataclass(slots=True)
class ServiceSpec:
    """One service as read from specs/<service>/: service.yaml and its tools, resources and prompts."""

    name: str
    title: str
    version: str
    description: str
    instructions: str
    base_path: str
    versions: dict[str, str]
    success_envelope: list[str]
    policy: dict[str, Any]
    source_dir: Path
    tools: list[ToolSpec] = field(default_factory=list)
    resources: list[ResourceSpec] = field(default_factory=list)
    prompts: list[PromptSpec] = field(default_factory=list)
    opt_in: bool = False
    """Served only where KUMITATE_SERVICES names it (spec `opt_in`)."""
    examples_order: list[str] = field(default_factory=list)
    """Tools whose examples run first, in this order (spec `examples_order`); the rest follow by name."""
    types: dict[str, dict[str, Any]] = field(default_factory=dict)
    """types/<file>.json -> parsed document, for model generation."""


@dataclass(frozen=True, slots=True)
class ToolsetSpec:
    """A named group of tools (specs/toolsets.yaml), served together at /mcp/<name>."""

    name: str
    description: str
    entries: tuple[str, ...]
    """As written: `<service>` (every tool of it) or `<service>.<tool>`."""
    source: Path


@dataclass(slots=True)
class SpecTree:
    """Everything under specs/: the error catalogue, the services, the toolsets, and the problems found
    while reading (a tree with problems is not generated from)."""

    root: Path
    errors: dict[str, ErrorCode]
    services: list[ServiceSpec]
    problems: list[Problem]
    sources: list[Path]
    toolsets: list[ToolsetSpec] = field(default_factory=list)

    def service(self, name: str) -> ServiceSpec:
        """The service named `name`; KeyError when there is none."""
        for svc in self.services:
            if svc.name == name:
                return svc
        raise KeyError(name)

    def all_tools(self) -> list[ToolSpec]:
        """Every tool of every service, opt-in services included, in service order."""
        return [tool for svc in self.services for tool in svc.tools]

    def tools_in_example_order(self) -> list[ToolSpec]:
        """`all_tools`, each service's in the order its examples run: its `examples_order` first, then by name."""
        ordered: list[ToolSpec] = []
        for svc in self.services:
            first = {name: index for index, name in enumerate(svc.examples_order)}
            ordered += sorted(svc.tools, key=lambda tool: first.get(tool.name, len(first)))  # stable: by name after
        return ordered

    def default_tools(self) -> list[ToolSpec]:
        """The tools served when no service is named: every service's but the `opt_in` ones'."""
        return [tool for svc in self.services if not svc.opt_in for tool in svc.tools]

    def toolset_tools(self, toolset: ToolsetSpec) -> list[ToolSpec]:
        """The tools a toolset names that exist (lint KT114 reports the others), in service order."""
        wanted = set(toolset.entries)
        return [t for t in self.all_tools() if t.service in wanted or f"{t.service}.{t.name}" in wanted]

    def sources_hash(self, paths: list[Path] | None = None) -> str:
        """A content hash of the given spec files (all of them by default)."""
        digest = hashlib.sha256()
        for path in sorted(paths or self.sources):
            digest.update(path.relative_to(self.root).as_posix().encode())
            digest.update(b"\0")
            digest.update(path.read_bytes())
        return digest.hexdigest()[:16]


class _MetaValidators:
    """Validators for the files under specs/_meta, which may $ref each other."""

    def __init__(self, meta_dir: Path) -> None:
        resources = []
        self.schemas: dict[str, dict[str, Any]] = {}
        for path in sorted(meta_dir.glob("*.schema.json")):
            schema = json.loads(path.read_text(encoding="utf-8"))
            self.schemas[path.name] = schema
            resources.append((path.name, Resource.from_contents(schema)))
            resources.append((schema["$id"], Resource.from_contents(schema)))
        self.registry: Registry[Any] = Registry().with_resources(resources)

    def check(self, kind: str, doc: object, rel: str) -> list[Problem]:
        schema = self.schemas[f"{kind}.schema.json"]
        validator = Draft202012Validator(schema, registry=self.registry)
        problems = []
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
            pointer = "/" + "/".join(str(p) for p in err.absolute_path) if err.absolute_path else ""
            problems.append(
                Problem(rel, pointer, "KT001", f"does not match specs/_meta/{kind}.schema.json: {err.message}")
            )
        return problems


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve().parent).as_posix()
    except ValueError:
        return path.as_posix()


def _read(path: Path, root: Path, problems: list[Problem]) -> object:
    try:
        doc = load_document(path)
    except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        problems.append(Problem(_rel(path, root), "", "KT000", f"cannot parse: {exc}"))
        return None
    if doc is None:  # an empty file: report it instead of silently skipping it
        problems.append(Problem(_rel(path, root), "", "KT000", "the file is empty"))
    return doc


def _deref(
    schema: object,
    source: Path,
    root: Path,
    pointer: str,
    rel: str,
    problems: list[Problem],
    names: dict[str, str] | None = None,
) -> object:
    """`schema` with its refs inlined; `names` collects canonical JSON -> name of each type it used."""
    followed: set[tuple[Path, str]] = set()
    try:
        resolved = dereference(schema, source, root, pointer, on_ref=lambda f, frag: followed.add((f, frag)))
        for target_file, fragment in sorted(followed):
            if fragment.strip("/") and names is not None:
                names.setdefault(shared.canonical(resolve(target_file, fragment, root)), fragment.rsplit("/", 1)[-1])
        return resolved
    except RefError as exc:
        problems.append(Problem(rel, exc.pointer, "KT002", str(exc)))
        return None
    except (yaml.YAMLError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        # the target file itself is broken (reported as KT000 when it is a types/ file); do not crash
        problems.append(Problem(rel, pointer, "KT002", f"a $ref target cannot be parsed: {exc}"))
        return None


def _merge_policy(base: dict[str, Any], override: dict[str, Any] | None) -> dict[str, Any]:
    merged = dict(base)
    merged.update(override or {})
    return merged


def _deref_object(
    schema: object,
    source: Path,
    root: Path,
    pointer: str,
    rel: str,
    problems: list[Problem],
    names: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """_deref of a tool's or resource's input or output, which must come out a JSON object (a model's schema):
    None when it does not (KT002, unless _deref already said why)."""
    resolved = _deref(schema, source, root, pointer, rel, problems, names)
    if resolved is not None and not isinstance(resolved, dict):
        problems.append(Problem(rel, pointer, "KT002", "the schema here must come out a JSON object"))
        return None
    return resolved


PACKAGED_META = Path(__file__).resolve().parent / "meta"
"""The meta-schemas shipped with kumitate, for projects whose specs/ carry no _meta/ of their own."""


def load(root: Path) -> SpecTree:
    """Load `root` (the specs/ directory). Problems are collected, never raised."""
    clear_cache()
    root = root.resolve()
    problems: list[Problem] = []
    sources: list[Path] = []
    meta = _MetaValidators(root / "_meta" if (root / "_meta").is_dir() else PACKAGED_META)

    errors: dict[str, ErrorCode] = {}
    errors_path = root / "errors.yaml"
    sources.append(errors_path)
    doc = _read(errors_path, root, problems) if errors_path.exists() else None
    if doc is None and not errors_path.exists():
        problems.append(Problem(_rel(errors_path, root), "", "KT000", "the error catalogue is missing"))
    elif doc is not None:
        problems += meta.check("errors", doc, _rel(errors_path, root))
        # Keep every declared code even when an entry is malformed (that is KT001, which blocks
        # generation anyway), so one bad entry does not turn every tool's errors into KT104.
        codes = doc.get("codes") if isinstance(doc, dict) else None
        for code, entry in (codes if isinstance(codes, dict) else {}).items():
            entry = entry if isinstance(entry, dict) else {}
            errors[str(code)] = ErrorCode(
                str(code),
                entry.get("status", 0),
                entry.get("retryable", False),
                entry.get("title", ""),
                entry.get("description", ""),
            )

    services = []
    for service_file in sorted(root.glob("*/service.yaml")):
        svc = _load_service(service_file, root, meta, problems, sources)
        if svc is not None:
            services.append(svc)
    toolsets = _load_toolsets(root / TOOLSETS_FILE, root, meta, problems, sources)
    return SpecTree(
        root=root,
        errors=errors,
        services=services,
        problems=problems,
        sources=sorted(set(sources)),
        toolsets=toolsets,
    )


TOOLSETS_FILE = "toolsets.yaml"


def _load_toolsets(
    path: Path, root: Path, meta: _MetaValidators, problems: list[Problem], sources: list[Path]
) -> list[ToolsetSpec]:
    """specs/toolsets.yaml, which is optional."""
    if not path.exists() or "toolsets.schema.json" not in meta.schemas:
        return []
    sources.append(path)
    doc = _read(path, root, problems)
    if doc is None:
        return []
    found = meta.check("toolsets", doc, _rel(path, root))
    problems += found
    if found or not isinstance(doc, dict):  # the meta-schema's top is an object: not one is a problem found
        return []
    return [
        ToolsetSpec(name, entry["description"], tuple(entry["tools"]), path)
        for name, entry in sorted(doc["toolsets"].items())
    ]


def _load_service(
    service_file: Path, root: Path, meta: _MetaValidators, problems: list[Problem], sources: list[Path]
) -> ServiceSpec | None:
    sdir = service_file.parent
    sources.append(service_file)
    checked = _read_checked("service", service_file, root, meta, problems, named_by=(sdir.name, "directory"))
    if checked is None:
        return None
    _, doc = checked
    svc = ServiceSpec(
        name=doc["name"],
        title=doc["title"],
        version=doc["version"],
        description=doc["description"],
        instructions=doc.get("instructions", ""),
        base_path=doc.get("http", {}).get("base_path", naming.default_base_path(doc["name"])),
        versions=doc.get("versions", {}),
        success_envelope=doc.get("success_envelope", []),
        policy=doc.get("policy", {}),
        source_dir=sdir,
        opt_in=bool(doc.get("opt_in", False)),
        examples_order=list(doc.get("examples_order", [])),
    )
    for type_file in sorted((sdir / "types").glob("*.json")):
        sources.append(type_file)
        tdoc = _read(type_file, root, problems)
        if isinstance(tdoc, dict):
            svc.types[type_file.stem] = tdoc
        elif tdoc is not None:
            problems.append(Problem(_rel(type_file, root), "", "KT000", "a types file is a JSON object (its $defs)"))
    svc.tools = _load_all("tool", _load_tool, svc, root, meta, problems, sources)
    svc.resources = _load_all("resource", _load_resource, svc, root, meta, problems, sources)
    svc.prompts = _load_all("prompt", _load_prompt, svc, root, meta, problems, sources)
    names = {tool.name for tool in svc.tools}
    for index, name in enumerate(svc.examples_order):
        if name not in names:
            message = f"examples_order names {name!r}, which is not a tool of {svc.name}"
            problems.append(Problem(_rel(service_file, root), f"/examples_order/{index}", "KT003", message))
    return svc


def _load_all(
    kind: str,
    load: Callable[[Path, str, dict[str, Any], ServiceSpec, Path, list[Problem]], T | None],
    svc: ServiceSpec,
    root: Path,
    meta: _MetaValidators,
    problems: list[Problem],
    sources: list[Path],
) -> list[T]:
    """Every `<kind>s/*.yaml` of the service, in name order, checked (_read_checked) and built by `load`
    (called with the file, its relative name, its document, the service, the root and the problems);
    a file that does not load leaves its problems and no item."""
    items: list[T] = []
    for path in sorted((svc.source_dir / f"{kind}s").glob("*.yaml")):
        sources.append(path)
        checked = _read_checked(kind, path, root, meta, problems)
        item = None if checked is None else load(path, *checked, svc, root, problems)
        if item is not None:
            items.append(item)
    return items


def _read_checked(
    kind: str,
    path: Path,
    root: Path,
    meta: _MetaValidators,
    problems: list[Problem],
    named_by: tuple[str, str] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """A service, tool, resource or prompt file read and checked against its meta-schema (None when it cannot
    be loaded; the problems say why), its `name` checked against the name that places it (KT003): `named_by`
    (name, what gives it), the file name by default."""
    expected, what = named_by or (path.stem, "file name")
    rel = _rel(path, root)
    doc = _read(path, root, problems)
    if doc is None:
        return None
    found = meta.check(kind, doc, rel)
    problems += found
    if found or not isinstance(doc, dict):  # the meta-schema's top is an object: not one is a problem found
        return None
    if doc["name"] != expected:
        problems.append(
            Problem(rel, "/name", "KT003", f"{kind} name {doc['name']!r} must equal its {what} {expected!r}")
        )
    return rel, doc


def _load_prompt(
    path: Path, rel: str, doc: dict[str, Any], svc: ServiceSpec, root: Path, problems: list[Problem]
) -> PromptSpec:
    return PromptSpec(
        service=svc.name,
        name=doc["name"],
        title=doc.get("title", doc["summary"]),
        summary=doc["summary"],
        description=doc["description"],
        arguments=[{"required": False, **a} for a in doc.get("arguments", [])],
        errors=list(doc.get("errors", [])),
        policy=doc.get("policy", {}),
        source=path,
    )


def _load_tool(
    path: Path, rel: str, doc: dict[str, Any], svc: ServiceSpec, root: Path, problems: list[Problem]
) -> ToolSpec | None:
    names: dict[str, str] = {}
    input_schema = _deref_object(doc["input"], path, root, "/input", rel, problems, names)
    output_schema = _deref_object(doc["output"], path, root, "/output", rel, problems, names)
    if input_schema is None or output_schema is None:
        return None
    own_defs = doc["input"].get("$defs") if isinstance(doc["input"], dict) else None
    if isinstance(own_defs, dict) and own_defs:
        # definitions written in the input itself are part of what the tool advertises (JSON Schema 2020-12
        # `$defs`, `$anchor` and all: SEP-1613/SEP-2106 say clients keep them), not only a place refs point at
        defs = _deref(own_defs, path, root, "/input/$defs", rel, problems)
        input_schema = {**input_schema, "$defs": defs} if isinstance(defs, dict) else input_schema
    wire_input = shared.hoist(input_schema, names)
    http = doc.get("http", {})
    method = http.get("method", "POST")
    route = http.get("path", naming.default_tool_path(svc.base_path, doc["name"]))
    examples = [
        Example(
            name=ex["name"],
            input=ex["input"],
            output=ex.get("output"),
            error=ex.get("error"),
            match=ex.get("match", "exact"),
            description=ex.get("description", ""),
        )
        for ex in doc.get("examples", [])
    ]
    return ToolSpec(
        service=svc.name,
        name=doc["name"],
        summary=doc["summary"],
        description=doc["description"],
        input_schema=input_schema,
        output_schema=output_schema,
        errors=list(doc.get("errors", [])),
        http_method=method,
        http_path=route,
        http_shape=HttpShape.parse(http, route),
        content_types=list(http.get("content_types", ["application/json"])),
        form_flatten=list(http.get("form_flatten", [])),
        form_deep_objects=list(http.get("form_deep_objects", [])),
        links=_links(doc),
        annotations=Annotations.parse(doc["mcp"]["annotations"]),
        requires_client=list(doc["mcp"].get("requires_client", [])),
        text_content=doc["mcp"].get("text_content"),
        policy=_merge_policy(svc.policy, doc.get("policy")),
        deprecated=Deprecation.parse(doc.get("deprecated")),
        execution=doc.get("execution"),
        examples=examples,
        source=path,
        raw=doc,
        handler_input=doc.get("handler_input", "model"),
        handler_output=doc.get("handler_output", "model"),
        inline_max_bytes=doc.get("inline_max_bytes"),
        wire_input=wire_input,
        wire_output=shared.hoist(advertised.output_schema(shared.hoist(output_schema, names), wire_input), names),
        cache=doc["mcp"].get("cache"),
    )


def _load_resource(
    path: Path, rel: str, doc: dict[str, Any], svc: ServiceSpec, root: Path, problems: list[Problem]
) -> ResourceSpec:
    output = None
    if "output" in doc:
        output = _deref_object(doc["output"], path, root, "/output", rel, problems)
    default_path = naming.default_tool_path(svc.base_path, doc["name"])
    params = naming.uri_params(doc["uri"])
    if params:
        default_path += "".join(f"/{{{p}}}" for p in params)
    return ResourceSpec(
        service=svc.name,
        name=doc["name"],
        uri=doc["uri"],
        summary=doc["summary"],
        description=doc["description"],
        mime_type=doc["mime_type"],
        output_schema=output,
        errors=list(doc.get("errors", [])),
        http_path=doc.get("http", {}).get("path", default_path),
        policy=_merge_policy(svc.policy, doc.get("policy")),
        enabled_by=doc.get("enabled_by"),
        source=path,
        raw=doc,
        also_mime_types=list(doc.get("also_mime_types", [])),
        cache=doc.get("cache"),
        links=_links(doc),
    )


def tool_sources(tool: ToolSpec) -> list[Path]:
    """The files a tool's generated surface depends on (its yaml and every file it refs)."""
    files = {tool.source}
    dereference(tool.raw["input"], tool.source, tool.source.parents[2], on_ref=lambda f, _: files.add(f))
    dereference(tool.raw["output"], tool.source, tool.source.parents[2], on_ref=lambda f, _: files.add(f))
    return sorted(files)
