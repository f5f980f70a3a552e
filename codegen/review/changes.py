"""The changes of one tool, resource or service on every surface: HTTP route, errors and scopes, MCP
annotations and served arguments, wire schemas (schemas.py), the Python API (pyapi.py), LLM text.

The MCP surface is compared as `tools/list` serves it (codegen.docs.tool_list_entry: policy adds
`idempotency_key`, a deprecation prefixes the description).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

from codegen import docs, naming
from codegen.review import surfaces
from codegen.review.findings import Change, show
from codegen.review.pyapi import PyApi, diff_models, wire_renames, with_causes
from codegen.review.renames import class_renames
from codegen.review.schemas import diff_schema
from codegen.specs import ResourceSpec, ServiceSpec, SpecTree, ToolSpec
from kumitate.httpshape import HttpShape


def _text_changes(old: str | None, new: str | None, label: str, rule: str) -> Iterator[Change]:
    a, b = (old or "").strip(), (new or "").strip()
    if a != b:
        yield rule, f"{label} changed ({len(a)} → {len(b)} characters)", None


def _error_changes(base: SpecTree, head: SpecTree, old: list[str], new: list[str]) -> Iterator[Change]:
    for code in sorted(set(new) - set(old)):
        yield "ERROR_CODE_ADDED", f"error `{code}` is new", None
    for code in sorted(set(old) - set(new)):
        yield "ERROR_CODE_REMOVED", f"error `{code}` no longer declared", None
    for code in sorted(set(old) & set(new)):
        sa = base.errors[code].status if code in base.errors else None
        sb = head.errors[code].status if code in head.errors else None
        if sa != sb:
            yield "ERROR_STATUS_CHANGED", f"error `{code}`: HTTP {sa} → {sb}", None
    st_a, st_b = surfaces.statuses(base, old), surfaces.statuses(head, new)
    for status in sorted(set(st_b) - set(st_a)):
        cause = "ERROR_CODE_ADDED" if set(st_b[status]) - set(old) else "ERROR_STATUS_CHANGED"
        yield "HTTP_STATUS_ADDED", f"HTTP {status} ({', '.join(st_b[status])}) can now be returned", cause
    for status in sorted(set(st_a) - set(st_b)):
        yield "HTTP_STATUS_REMOVED", f"HTTP {status} is no longer returned", None


def _served_arguments(tool: ToolSpec) -> dict[str, Any]:
    """The arguments tools/list serves beyond the spec's input (policy.idempotency's `idempotency_key`)."""
    served = docs.tool_list_entry(tool)["inputSchema"].get("properties") or {}
    declared = tool.input_schema.get("properties") or {}
    return {k: v for k, v in served.items() if k not in declared}


def _mcp_changes(old: ToolSpec, new: ToolSpec) -> Iterator[Change]:
    extra_a, extra_b = _served_arguments(old), _served_arguments(new)
    for name in sorted(set(extra_b) - set(extra_a)):
        yield "MCP_ARGUMENT_ADDED", f"MCP inputSchema: optional argument `{name}` added (policy)", None
    for name in sorted(set(extra_a) - set(extra_b)):
        effect = (
            "callers that send it are rejected (additionalProperties: false)"
            if new.input_schema.get("additionalProperties") is False
            else "callers that send it have it ignored, so their retries run twice"
        )
        yield "MCP_ARGUMENT_NO_DELETE", f"MCP inputSchema: argument `{name}` removed (policy): {effect}", None


def _route_changes(old: ToolSpec, new: ToolSpec, rename_cause: str | None) -> Iterator[Change]:
    """The tool's HTTP route: its method, its path (caused by the rename when the tool was renamed) and
    the content types it accepts."""
    if old.http_method != new.http_method:
        yield "HTTP_METHOD_CHANGED", f"{old.http_method} → {new.http_method}", None
    if old.http_path != new.http_path:
        yield "HTTP_PATH_CHANGED", f"`{old.http_path}` → `{new.http_path}`", rename_cause
    yield from _shape_changes(old.http_shape, new.http_shape)
    for ctype in sorted(set(old.content_types) - set(new.content_types)):
        yield "HTTP_CONTENT_TYPE_REMOVED", f"`{ctype}` no longer accepted", None
    for ctype in sorted(set(new.content_types) - set(old.content_types)):
        yield "HTTP_CONTENT_TYPE_ADDED", f"`{ctype}` now accepted", None


def _placements(shape: HttpShape) -> dict[str, str]:
    """Input property -> where it travels (`query 'limit'`); the body's are `body`."""
    return {p.property: f"{p.location} '{p.name}'" for p in shape.params}


def _shape_changes(old: HttpShape, new: HttpShape) -> Iterator[Change]:
    """The REST shape (kumitate.httpshape): where each input property travels, the success status, and
    how the output is carried (response headers, body)."""
    placed_a, placed_b = _placements(old), _placements(new)
    for prop in sorted(set(placed_a) | set(placed_b)):
        before, after = placed_a.get(prop, "the body"), placed_b.get(prop, "the body")
        if before != after:
            yield "HTTP_PARAMETER_MOVED", f"`{prop}`: {before} → {after}", None
    if old.body != new.body:
        yield "HTTP_PARAMETER_MOVED", f"request body: {old.body.as_spec()} → {new.body.as_spec()}", None
    if old.status != new.status:
        yield "HTTP_SUCCESS_STATUS_CHANGED", f"{old.status} → {new.status}", None
    if old.response_headers != new.response_headers or old.response_body != new.response_body:
        before = f"headers {dict(old.response_headers)}, body {old.response_body.as_spec()}"
        after = f"headers {dict(new.response_headers)}, body {new.response_body.as_spec()}"
        yield "HTTP_RESPONSE_SHAPE_CHANGED", f"{before} → {after}", None


def _scope_changes(old: ToolSpec, new: ToolSpec) -> Iterator[Change]:
    """The scopes a call needs; a scope added to a tool that is now public requires nothing of a caller."""
    scopes_a, scopes_b = set(old.policy.get("scopes", [])), set(new.policy.get("scopes", []))
    if not new.policy.get("public"):
        for scope in sorted(scopes_b - scopes_a):
            yield "AUTH_SCOPE_ADDED", f"scope `{scope}` is now required", None
    for scope in sorted(scopes_a - scopes_b):
        yield "AUTH_SCOPE_REMOVED", f"scope `{scope}` is no longer required", None


def diff_tool(
    base: SpecTree,
    head: SpecTree,
    old: ToolSpec,
    new: ToolSpec,
    renamed: bool,
    api: tuple[PyApi, PyApi] | None = None,
    declared: bool = True,
) -> Iterator[Change]:
    """The changes between two versions of a tool (renamed or not): schemas, errors, policy, annotations,
    HTTP route and text, each a rule id and what changed, for the findings."""
    rename_cause = "TOOL_RENAMED" if renamed else None
    if renamed:
        how = (
            "renamed_from"
            if declared
            else f"inferred: same input and output schemas; declare `renamed_from: {old.name}` to confirm it"
        )
        yield "TOOL_RENAMED", f"`{old.name}` → `{new.name}` ({how})", None
    yield from _route_changes(old, new, rename_cause)
    yield from _error_changes(base, head, old.errors, new.errors)
    yield from _scope_changes(old, new)
    yield from _annotation_changes(old.annotations.as_spec(), new.annotations.as_spec())
    if new.deprecated and not old.deprecated:
        yield "TOOL_DEPRECATED", f"deprecated since {new.deprecated.since}", None
    wire = [*diff_schema(old.input_schema, new.input_schema, "input")]
    wire += diff_schema(old.output_schema, new.output_schema, "output")
    yield from wire
    yield from _mcp_changes(old, new)
    renames = {}
    if renamed:
        renames = {
            naming.input_model(old.name): naming.input_model(new.name),
            naming.output_model(old.name): naming.output_model(new.name),
        }
    api_a, api_b = api or (PyApi({}, {}), PyApi({}, {}))
    defs_a, defs_b = api_a.defs.get(old.service), api_b.defs.get(new.service)
    classes = class_renames(api_a.classes.get(old.service, {}), api_b.classes.get(new.service, {}))
    models = diff_models(
        surfaces.tool_models(old, defs_a),
        surfaces.tool_models(new, defs_b),
        renames,
        None,
        classes,
        wire_renames(wire),
    )
    yield from with_causes(wire, models)
    yield from _text_changes(old.summary, new.summary, "summary", "SUMMARY_CHANGED")
    # the description as tools/list serves it: a deprecation note comes first
    yield from _text_changes(docs.mcp_description(old), docs.mcp_description(new), "description", "DESCRIPTION_CHANGED")
    if old.annotations.title != new.annotations.title:
        yield (
            "TITLE_CHANGED",
            f"title {show(old.annotations.title)} → {show(new.annotations.title)}",
            None,
        )
    if [asdict(e) for e in old.examples] != [asdict(e) for e in new.examples]:
        names_a, names_b = [e.name for e in old.examples], [e.name for e in new.examples]
        yield (
            "EXAMPLES_CHANGED",
            f"examples {names_a} → {names_b}" if names_a != names_b else "example content changed",
            None,
        )


ANNOTATION_BREAKS = {
    # key: (value that is safe, rule when it moves away from it)
    "readOnlyHint": (True, "ANNOTATION_NO_LONGER_READ_ONLY"),
    "destructiveHint": (False, "ANNOTATION_NOW_DESTRUCTIVE"),
    "idempotentHint": (True, "ANNOTATION_NO_LONGER_IDEMPOTENT"),
    "openWorldHint": (False, "ANNOTATION_NOW_OPEN_WORLD"),
}
ANNOTATION_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
"""MCP's defaults when a hint is absent."""


def _annotation_changes(old: dict[str, Any], new: dict[str, Any]) -> Iterator[Change]:
    for key, (safe, rule) in ANNOTATION_BREAKS.items():
        a, b = old.get(key, ANNOTATION_DEFAULTS[key]), new.get(key, ANNOTATION_DEFAULTS[key])
        if a == b:
            continue
        if a == safe:
            yield rule, f"{key}: {show(a)} → {show(b)}", None
        else:
            yield "ANNOTATION_RELAXED", f"{key}: {show(a)} → {show(b)}", None


def diff_resource(
    base: SpecTree,
    head: SpecTree,
    old: ResourceSpec,
    new: ResourceSpec,
    api: tuple[PyApi, PyApi] | None = None,
) -> Iterator[Change]:
    """The changes between two versions of a resource: URI, MIME type, output schema, errors and text."""
    if old.uri != new.uri:
        yield "RESOURCE_URI_CHANGED", f"`{old.uri}` → `{new.uri}`", None
    if old.mime_type != new.mime_type:
        yield "RESOURCE_MIME_CHANGED", f"`{old.mime_type}` → `{new.mime_type}`", None
    if old.http_path != new.http_path:
        yield "HTTP_PATH_CHANGED", f"`GET {old.http_path}` → `GET {new.http_path}`", None
    yield from _error_changes(base, head, old.errors, new.errors)
    wire: list[Change] = []
    if old.output_schema is not None and new.output_schema is not None:
        wire = list(diff_schema(old.output_schema, new.output_schema, "output"))
    yield from wire
    api_a, api_b = api or (PyApi({}, {}), PyApi({}, {}))
    classes = class_renames(api_a.classes.get(old.service, {}), api_b.classes.get(new.service, {}))
    models = diff_models(
        surfaces.resource_models(old, api_a.defs.get(old.service)),
        surfaces.resource_models(new, api_b.defs.get(new.service)),
        {},
        "RESOURCE_MIME_CHANGED",
        classes,
        wire_renames(wire),
    )
    yield from with_causes(wire, models)
    yield from _text_changes(old.summary, new.summary, "summary", "SUMMARY_CHANGED")
    yield from _text_changes(old.description, new.description, "description", "DESCRIPTION_CHANGED")


def diff_service(old: ServiceSpec, new: ServiceSpec) -> Iterator[Change]:
    """The changes of a service's own fields: version, text and success envelope."""
    if old.version != new.version:
        yield "SERVICE_VERSION_CHANGED", f"version {old.version} → {new.version}", None
    for attr in ("title", "description", "instructions"):
        yield from _text_changes(getattr(old, attr), getattr(new, attr), attr, "SERVICE_TEXT_CHANGED")
    for name in sorted(set(old.success_envelope) - set(new.success_envelope)):
        yield "SUCCESS_ENVELOPE_FIELD_NO_DELETE", f"`{name}` no longer added to success responses", None
    for name in sorted(set(new.success_envelope) - set(old.success_envelope)):
        yield "SUCCESS_ENVELOPE_FIELD_ADDED", f"`{name}` now added to success responses", None
