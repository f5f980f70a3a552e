"""Lint rules over a loaded spec tree. Every rule has a stable ID, listed in RULES.

IDs KT0xx are structural (loading, meta-schema, refs) and are raised by the
loader (codegen/specs.py); KT1xx are the rules below. `python -m codegen --lint`
prints every problem of a tree in one run and exits non-zero if there is any.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import jsonschema_rs

from codegen import naming
from codegen.links import check_links
from codegen.lint_http import check_http_shape
from codegen.refs import JsonValue
from codegen.specs import GENERIC_ERRORS, Problem, ResourceSpec, SpecTree, ToolSpec
from kumitate.transports.http.forms import may_be_object

RULES: dict[str, str] = {
    "KT000": "every spec file parses (YAML / JSON)",
    "KT001": "every spec file matches its meta-schema in specs/_meta",
    "KT002": "$ref stays inside the repository and resolves; no recursive refs",
    "KT003": "file, directory and declared names agree",
    "KT101": "tool names are snake_case and at most 64 characters",
    "KT102": "tool names are unique across all services",
    "KT103": "MCP annotations are all present and consistent with the HTTP method",
    "KT104": "every declared error code exists in the catalogue",
    "KT105": "every example validates against its tool's schemas and names a declared error",
    "KT106": "summary and description are present and written for an LLM",
    "KT107": "the input schema is an object schema",
    "KT108": "schemas are valid JSON Schema 2020-12",
    "KT109": "HTTP routes (method + path) are unique",
    "KT110": "a deprecation's sunset is not earlier than its since date",
    "KT111": "resource URIs are unique and their HTTP path carries the URI's parameters",
    "KT112": "every integer in a tool's input declares a minimum and a maximum that fit in 64 bits",
    "KT113": "a tool that writes (readOnlyHint false) declares `policy.idempotency`, or says why not",
    "KT114": "a toolset names existing services and tools, and its name is not a service's",
    "KT115": "an inline enum has a `title`: it names the generated class (else the generator numbers it: Format1)",
    "KT116": "`http.form_flatten` names object properties of the input, on a tool that takes forms, whose properties "
    "clash with no other form field",
    "KT117": "`mcp.text_content` names a required string property of the output",
    "KT118": "`http.form_deep_objects` names properties of the input that may be objects, on a tool that takes forms, "
    "none of them also in `http.form_flatten`",
    "KT120": "a link names an existing tool or resource, its fields that target's inputs, fed by fields of this "
    "result (or input) of a type the target takes",
    "KT121": "a REST-shaped `http` places each input property once, where it can travel (codegen/lint_http.py)",
}

ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
INT64 = (-(2**63), 2**63 - 1)
SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs")
SUBSCHEMA_ONE = ("items", "additionalProperties", "contains", "not", "if", "then", "else", "unevaluatedItems")
SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
SUMMARY_MAX = 200
DESCRIPTION_MIN = 40


def _rel(path: Path, tree: SpecTree) -> str:
    return path.resolve().relative_to(tree.root.parent).as_posix()


def lint(tree: SpecTree) -> list[Problem]:
    """All problems: the loader's plus every lint rule's, in file order."""
    problems = list(tree.problems)
    for check in CHECKS:
        problems.extend(check(tree))
    return sorted(set(problems), key=lambda p: (p.file, p.pointer, p.rule, p.message))


def _tools(tree: SpecTree) -> Iterator[tuple[ToolSpec, str]]:
    for tool in tree.all_tools():
        yield tool, _rel(tool.source, tree)


def check_names(tree: SpecTree) -> Iterator[Problem]:
    """KT101, KT102: tool names are snake_case, short enough, and unique across services."""
    seen: dict[str, str] = {}
    for tool, rel in _tools(tree):
        if not naming.SNAKE.match(tool.name):
            yield Problem(rel, "/name", "KT101", f"tool name {tool.name!r} is not snake_case")
        if len(tool.name) > naming.MAX_TOOL_NAME:
            yield Problem(rel, "/name", "KT101", f"tool name is {len(tool.name)} characters; the limit is 64")
        if tool.name in seen:
            yield Problem(rel, "/name", "KT102", f"tool name {tool.name!r} is already used by {seen[tool.name]}")
        else:
            seen[tool.name] = rel


def check_annotations(tree: SpecTree) -> Iterator[Problem]:
    """KT103: every MCP annotation is declared and agrees with the HTTP method (a GET is read-only)."""
    for tool, rel in _tools(tree):
        ann = tool.annotations.as_spec()
        missing = [k for k in ANNOTATION_KEYS if k not in ann]
        if missing:
            yield Problem(rel, "/mcp/annotations", "KT103", f"missing annotations: {', '.join(missing)}")
            continue
        if ann["readOnlyHint"] and ann["destructiveHint"]:
            yield Problem(rel, "/mcp/annotations", "KT103", "a read-only tool cannot be destructive")
        if tool.http_method == "GET" and not ann["readOnlyHint"]:
            yield Problem(rel, "/http/method", "KT103", "GET is for read-only tools; set readOnlyHint or use POST")
        if tool.http_method in ("PUT", "DELETE") and not ann["idempotentHint"]:
            yield Problem(
                rel, "/mcp/annotations/idempotentHint", "KT103", f"{tool.http_method} implies idempotentHint: true"
            )
        if tool.http_method == "DELETE" and not ann["destructiveHint"]:
            yield Problem(rel, "/mcp/annotations/destructiveHint", "KT103", "DELETE implies destructiveHint: true")
        if ann["readOnlyHint"] and not ann["idempotentHint"]:
            yield Problem(rel, "/mcp/annotations/idempotentHint", "KT103", "a read-only tool is idempotent")
        if tool.rules.idempotency and ann["readOnlyHint"]:
            yield Problem(rel, "/policy/idempotency", "KT103", "idempotency keys are for tools that write")


def check_errors(tree: SpecTree) -> Iterator[Problem]:
    """KT104: every error code a tool or service declares exists in specs/errors.yaml."""
    for tool, rel in _tools(tree):
        for i, code in enumerate(tool.errors):
            if code not in tree.errors:
                yield Problem(rel, f"/errors/{i}", "KT104", f"error code {code!r} is not in specs/errors.yaml")
    for svc in tree.services:
        for res in svc.resources:
            for i, code in enumerate(res.errors):
                if code not in tree.errors:
                    yield Problem(
                        _rel(res.source, tree),
                        f"/errors/{i}",
                        "KT104",
                        f"error code {code!r} is not in specs/errors.yaml",
                    )


def _validator(schema: dict[str, Any]) -> jsonschema_rs.Draft202012Validator | None:
    try:
        return jsonschema_rs.Draft202012Validator(schema)
    except (ValueError, jsonschema_rs.ValidationError):
        return None


def check_schemas(tree: SpecTree) -> Iterator[Problem]:
    """KT107, KT108: the schemas are valid JSON Schema 2020-12 and the input is an object."""
    for tool, rel in _tools(tree):
        for part, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            try:
                jsonschema_rs.meta.validate(schema)
            except jsonschema_rs.ValidationError as exc:
                yield Problem(rel, f"/{part}", "KT108", f"not a valid JSON Schema 2020-12: {exc.message}")
        if tool.input_schema.get("type") != "object":
            yield Problem(
                rel, "/input", "KT107", "the input schema must be `type: object` (MCP arguments are an object)"
            )
        if tool.output_schema.get("type") != "object":
            yield Problem(rel, "/output", "KT107", "the output schema must be `type: object` (MCP structured content)")


def check_examples(tree: SpecTree) -> Iterator[Problem]:
    """KT105: every example's input and output validate, and an error example names a declared code."""
    for tool, rel in _tools(tree):
        vin, vout = _validator(tool.input_schema), _validator(tool.output_schema)
        allowed = set(tool.errors) | set(GENERIC_ERRORS)
        for i, ex in enumerate(tool.examples):
            where = f"/examples/{i}"
            if ex.error is None and vin is not None:
                for err in vin.iter_errors(ex.input):
                    yield Problem(
                        rel, f"{where}/input", "KT105", f"example {ex.name!r} input is invalid: {err.message}"
                    )
            if ex.output is not None and vout is not None and ex.match == "exact":
                for err in vout.iter_errors(ex.output):
                    yield Problem(
                        rel, f"{where}/output", "KT105", f"example {ex.name!r} output is invalid: {err.message}"
                    )
            if ex.error is not None and ex.error not in allowed:
                yield Problem(
                    rel,
                    f"{where}/error",
                    "KT105",
                    f"example {ex.name!r} expects {ex.error}, which the tool does not declare",
                )


def check_text(tree: SpecTree) -> Iterator[Problem]:
    """KT106: summary and description are there and shaped for an LLM (a one-line summary, a fuller description)."""
    for tool, rel in _tools(tree):
        summary, description = tool.summary.strip(), tool.description.strip()
        if not summary:
            yield Problem(rel, "/summary", "KT106", "summary is empty")
        elif len(summary) > SUMMARY_MAX or "\n" in summary:
            yield Problem(rel, "/summary", "KT106", f"summary should be one line of at most {SUMMARY_MAX} characters")
        if len(description) < DESCRIPTION_MIN:
            yield Problem(
                rel,
                "/description",
                "KT106",
                f"description is shorter than {DESCRIPTION_MIN} characters: say what the tool does and when to use it",
            )
        elif description == summary:
            yield Problem(
                rel,
                "/description",
                "KT106",
                "description repeats the summary; say when to use the tool and what comes back",
            )
        if "TODO" in description or "TBD" in description:
            yield Problem(rel, "/description", "KT106", "description contains a placeholder")


_TEMPLATE = re.compile(r"{[^{}/]*}")


def check_routes(tree: SpecTree) -> Iterator[Problem]:
    """KT109: no two tools or resources share an HTTP method and path."""
    seen: dict[tuple[str, str], str] = {}
    entries: list[tuple[str, str, str]] = [(t.http_method, t.http_path, _rel(t.source, tree)) for t in tree.all_tools()]
    entries += [("GET", r.http_path, _rel(r.source, tree)) for s in tree.services for r in s.resources]
    for method, path, rel in entries:
        key = (method, _TEMPLATE.sub("{}", path))  # /pets/{id} and /pets/{pet_id} are one route
        if key in seen:
            yield Problem(rel, "/http", "KT109", f"{method} {path} is already served by {seen[key]}")
        else:
            seen[key] = rel


def check_deprecation(tree: SpecTree) -> Iterator[Problem]:
    """KT110: a deprecation's dates parse and its sunset is not before its since date."""
    for tool, rel in _tools(tree):
        dep = tool.deprecated
        if dep is None:
            continue
        try:  # `since` is checked even without a sunset: it is shown to clients
            since = date.fromisoformat(dep.since)
            sunset = date.fromisoformat(dep.sunset) if dep.sunset is not None else None
        except ValueError as exc:
            yield Problem(rel, "/deprecated", "KT110", f"bad date: {exc}")
            continue
        if sunset is not None and sunset < since:
            yield Problem(rel, "/deprecated/sunset", "KT110", f"sunset {sunset} is earlier than since {since}")


def check_resources(tree: SpecTree) -> Iterator[Problem]:
    """KT111: resource URIs are unique and each HTTP path carries the URI's parameters."""
    seen: dict[str, str] = {}
    for svc in tree.services:
        for res in svc.resources:
            rel = _rel(res.source, tree)
            if res.uri in seen:
                yield Problem(rel, "/uri", "KT111", f"uri {res.uri} is already used by {seen[res.uri]}")
            seen.setdefault(res.uri, rel)
            path_params = naming.uri_params(res.http_path)
            if sorted(path_params) != sorted(res.params):
                yield Problem(
                    rel, "/http/path", "KT111", f"HTTP path parameters {path_params} differ from the URI's {res.params}"
                )
            if res.is_json and res.output_schema is None:
                yield Problem(rel, "/output", "KT111", "a JSON resource needs an output schema")
            if not naming.SNAKE.match(res.name):
                yield Problem(rel, "/name", "KT111", f"resource name {res.name!r} is not snake_case")


def _subschemas(schema: JsonValue, pointer: str) -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema object inside `schema` (itself included), with its JSON pointer."""
    if not isinstance(schema, dict):
        return
    yield schema, pointer
    for key in SUBSCHEMA_MAPS:
        for name, sub in (schema.get(key) or {}).items():
            yield from _subschemas(sub, f"{pointer}/{key}/{name}")
    for key in SUBSCHEMA_ONE:
        yield from _subschemas(schema.get(key), f"{pointer}/{key}")
    for key in SUBSCHEMA_LISTS:
        for i, sub in enumerate(schema.get(key) or []):
            yield from _subschemas(sub, f"{pointer}/{key}/{i}")


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str) -> float | None:
    return schema.get(inclusive, schema.get(exclusive))


def check_integer_bounds(tree: SpecTree) -> Iterator[Problem]:
    """Input integers reach SQLite, DuckDB and arithmetic that hold 64 bits: an id of 2^63 was
    once a 500. A declared range makes it a 400 at validation, documented in the schema."""
    for tool, rel in _tools(tree):
        for schema, pointer in _subschemas(tool.input_schema, "/input"):
            if schema.get("type") != "integer":
                continue  # ["string", "integer"] ids are carried as text
            if "enum" in schema or "const" in schema:
                continue  # the values are listed
            low = _bound(schema, "minimum", "exclusiveMinimum")
            high = _bound(schema, "maximum", "exclusiveMaximum")
            if low is None or high is None:
                missing = [name for name, value in (("minimum", low), ("maximum", high)) if value is None]
                yield Problem(
                    rel, pointer, "KT112", f"integer without {' and '.join(missing)}: declare the range it may take"
                )
            elif not (INT64[0] <= low <= INT64[1] and INT64[0] <= high <= INT64[1]):
                yield Problem(rel, pointer, "KT112", f"integer range [{low}, {high}] does not fit in 64 bits")


def check_idempotency(tree: SpecTree) -> Iterator[Problem]:
    """A client retries a write whose answer it lost; only a key makes that retry safe."""
    for tool, rel in _tools(tree):
        if tool.annotations.read_only_hint is not False:
            continue
        declared = tool.policy.get("idempotency")
        if declared is None:
            yield Problem(
                rel,
                "/policy",
                "KT113",
                "a tool that writes declares `idempotency: true`, or `idempotency: false` with `idempotency_note`",
            )
        elif declared is False and not str(tool.policy.get("idempotency_note", "")).strip():
            yield Problem(rel, "/policy/idempotency", "KT113", "`idempotency: false` needs an `idempotency_note`: why")


def check_toolsets(tree: SpecTree) -> Iterator[Problem]:
    """KT114: a toolset names existing services and tools, and not a service's name."""
    services = {svc.name: {t.name for t in svc.tools} for svc in tree.services}
    for ts in tree.toolsets:
        rel = _rel(ts.source, tree)
        if ts.name in services:
            yield Problem(
                rel, f"/toolsets/{ts.name}", "KT114", "a toolset is served at /mcp/<name>: not a service's name"
            )
        for i, entry in enumerate(ts.entries):
            service, _, tool = entry.partition(".")
            if service not in services or (tool and tool not in services[service]):
                yield Problem(rel, f"/toolsets/{ts.name}/tools/{i}", "KT114", f"no service or tool {entry!r}")


def _untitled_enums(schema: JsonValue, pointer: str) -> Iterator[str]:
    for sub, where in _subschemas(schema, pointer):
        if "enum" in sub and not isinstance(sub.get("title"), str):
            yield where


def check_enum_titles(tree: SpecTree) -> Iterator[Problem]:
    """A shared type's own name (its `$defs` key) names its class; an enum written inline has none, so
    datamodel-code-generator names it after the property and numbers the clashes (`GraphType2`),
    names that change when another tool adds a property. The title is the stable name."""
    for svc in tree.services:
        for stem, doc in sorted(svc.types.items()):
            rel = _rel(svc.source_dir / "types" / f"{stem}.json", tree)
            for name, definition in ((doc or {}).get("$defs") or {}).items():
                top = f"/$defs/{name}"
                for where in _untitled_enums(definition, top):
                    if where != top:
                        yield Problem(rel, where, "KT115", "an inline enum needs a `title` (its class name)")
        parts: list[tuple[Path, dict[str, Any], tuple[str, ...]]] = [
            (t.source, t.raw, ("input", "output")) for t in svc.tools
        ]
        parts += [(r.source, r.raw, ("output",)) for r in svc.resources]
        for source, raw, keys in parts:
            for key in keys:
                for where in _untitled_enums(raw.get(key), f"/{key}"):
                    yield Problem(_rel(source, tree), where, "KT115", "an inline enum needs a `title` (its class name)")


def check_form_deep_objects(tree: SpecTree) -> Iterator[Problem]:
    """KT118: `http.form_deep_objects` names properties of the input that may be objects (by their type,
    their properties, or an alternative or part that may be), on a tool that takes forms, none of them
    also flattened."""
    for tool, rel in _tools(tree):
        where = "/http/form_deep_objects"
        if tool.form_deep_objects and not set(tool.content_types) - {"application/json"}:
            yield Problem(rel, where, "KT118", "the tool takes no form body (add a form type to http.content_types)")
        properties = tool.input_schema.get("properties", {})
        for name in tool.form_deep_objects:
            if name in tool.form_flatten:
                yield Problem(rel, where, "KT118", f"{name!r} is flattened (http.form_flatten) too: one or the other")
            elif not may_be_object(properties.get(name), tool.input_schema):
                yield Problem(rel, where, "KT118", f"{name!r} is not a property of the input that may be an object")


def check_form_flatten(tree: SpecTree) -> Iterator[Problem]:
    """KT116: `http.form_flatten` names object properties of the input, on a tool that takes forms,
    whose fields clash with no other form field."""
    for tool, rel in _tools(tree):
        if not tool.form_flatten:
            continue
        where = "/http/form_flatten"
        if not set(tool.content_types) - {"application/json"}:
            yield Problem(rel, where, "KT116", "the tool takes no form body (add a form type to http.content_types)")
        properties = tool.input_schema.get("properties", {})
        seen = dict.fromkeys(properties, "the input")
        for group in tool.form_flatten:
            target = properties.get(group)
            if not isinstance(target, dict) or target.get("type") != "object" or not target.get("properties"):
                yield Problem(rel, where, "KT116", f"{group!r} is not an object property of the input with properties")
                continue
            for name in target["properties"]:
                if name in seen:
                    yield Problem(rel, where, "KT116", f"form field {name!r} of {group!r} clashes with {seen[name]}")
                seen[name] = repr(group)


def check_text_content(tree: SpecTree) -> Iterator[Problem]:
    """KT117: `mcp.text_content` names a required string property of the output."""
    for tool, rel in _tools(tree):
        name = tool.text_content
        if name is None:
            continue
        output = tool.output_schema
        target = output.get("properties", {}).get(name)
        if not isinstance(target, dict) or target.get("type") != "string" or name not in output.get("required", []):
            yield Problem(
                rel, "/mcp/text_content", "KT117", f"{name!r} is not a required string property of the output"
            )


CHECKS: tuple[Callable[[SpecTree], Iterator[Problem]], ...] = (
    check_names,
    check_annotations,
    check_errors,
    check_schemas,
    check_examples,
    check_text,
    check_routes,
    check_deprecation,
    check_resources,
    check_integer_bounds,
    check_idempotency,
    check_toolsets,
    check_enum_titles,
    check_form_flatten,
    check_form_deep_objects,
    check_text_content,
    check_links,
    check_http_shape,
)


def resource_schema(res: ResourceSpec) -> str:
    """The resource's output schema as canonical JSON text, to compare two declarations."""
    return json.dumps(res.output_schema, sort_keys=True)
