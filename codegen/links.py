"""Workflows in the spec: `links` from a tool's (or resource's) result to the next call's input.

A link names the next tool (any service) or resource (the same service) and where each of its input
fields (or URI parameters) comes from: a path into this result (`chart.chart_id`, `candidates[].check_id`
for any item of an array) or into this call's own input (`$input.brand_name`). One module reads the paths
for every consumer: the lint (KT120: both ends exist, the types agree), the OpenAPI links schemathesis'
stateful phase walks, the `Next:` line MCP clients read, and the MCP stateful fuzz (codegen/fuzz/).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from codegen.refs import JsonValue
from codegen.specs import Link, Problem, ResourceSpec, SpecTree, ToolSpec

RULE = "KT120"
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
INPUT = "$input."
NUMERIC = {"integer", "number"}


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed source path: where in the result (or the call's input) a field's value is."""

    from_input: bool
    steps: tuple[tuple[str, bool], ...]
    """(property, then any item of it as an array)."""

    @classmethod
    def parse(cls, text: str) -> Path:
        """A link's field path: `$input.a.b` reads the input, `a.b` the result; `name[]` goes through each item."""
        from_input = text.startswith(INPUT)
        body = text.removeprefix(INPUT) if from_input else text
        return cls(from_input, tuple((part.removesuffix("[]"), part.endswith("[]")) for part in body.split(".")))

    @property
    def fans_out(self) -> bool:
        """Whether the path goes through a list (`[]`): the link then gives one target call per item."""
        return any(each for _, each in self.steps)

    def pointer(self) -> str:
        """The OpenAPI runtime expression; `*` (any item) is what schemathesis' wildcard links take."""
        parts = "".join(f"/{name}" + ("/*" if each else "") for name, each in self.steps)
        return f"$request.body#{parts}" if self.from_input else f"$response.body#{parts}"

    def values(self, result: object, arguments: object) -> list[object]:
        """Every value the path reaches in one call (its arguments and result); none when it reaches nothing."""
        found = [arguments if self.from_input else result]
        for name, each in self.steps:
            found = [node[name] for node in found if isinstance(node, dict) and node.get(name) is not None]
            if each:
                found = [item for node in found if isinstance(node, list) for item in node if item is not None]
        return found


@dataclass(frozen=True, slots=True)
class Source:
    """A field's source: one path (its value as it is), or a text with `{path}` placeholders
    (`SELECT * FROM {view}`: a string)."""

    text: str
    paths: tuple[Path, ...]
    template: bool

    @classmethod
    def parse(cls, text: str) -> Source:
        """A link's source: one field path, or a string template with `{path}` placeholders."""
        holes = PLACEHOLDER.findall(text)
        if holes:
            return cls(text, tuple(Path.parse(h) for h in holes), True)
        return cls(text, (Path.parse(text),), False)

    @property
    def fans_out(self) -> bool:
        """Whether any of its paths fans out over a list."""
        return any(p.fans_out for p in self.paths)

    def expression(self) -> str:
        """The OpenAPI runtime expression of this source (a template keeps its text around the pointers)."""
        if not self.template:
            return self.paths[0].pointer()
        return PLACEHOLDER.sub(lambda m: "{" + Path.parse(m.group(1)).pointer() + "}", self.text)

    def choices(self, result: object, arguments: object) -> list[list[object]]:
        """For each path, every value it reaches (an empty list: nothing to pass)."""
        return [p.values(result, arguments) for p in self.paths]

    def fill(self, picked: list[object]) -> object:
        """The field's value from one pick per path."""
        if not self.template:
            return picked[0]
        values = iter(picked)
        return PLACEHOLDER.sub(lambda _m: str(next(values)), self.text)


def schema_at(schema: JsonValue, path: Path) -> dict[str, Any] | None:
    """The (dereferenced) schema the path reaches, or None when it names nothing the schema declares."""
    node = schema
    for name, each in path.steps:
        node = _branch(node, _declares(name))
        if node is None:
            return None
        node = node["properties"][name]
        if each:
            node = _branch(node, lambda s: isinstance(s.get("items"), dict))
            if node is None:
                return None
            node = node["items"]
    return node if isinstance(node, dict) else None


def _declares(name: str) -> Callable[[dict[str, Any]], bool]:
    """A `fits` for _branch: the schema declares the property `name`."""
    return lambda schema: name in (schema.get("properties") or {})


def _branch(schema: object, fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The schema itself, or its first anyOf/oneOf/allOf branch, that `fits` (a nullable object, a union)."""
    if not isinstance(schema, dict):
        return None
    if fits(schema):
        return schema
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            found = _branch(sub, fits)
            if found is not None:
                return found
    return None


def types_of(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types a schema allows (None: it does not say)."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    branches = [types_of(s) for key in ("anyOf", "oneOf") for s in schema.get(key) or [] if isinstance(s, dict)]
    if branches and all(b is not None for b in branches):
        return set().union(*[b for b in branches if b is not None])
    if "const" in schema or "enum" in schema:
        values = schema.get("enum", [schema.get("const")])
        return {_json_type(v) for v in values}
    return None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "object")


def agree(source: set[str] | None, target: set[str] | None) -> bool:
    """A value of the source's types can be a value of the target's (null aside: nothing to pass then)."""
    if source is None or target is None:
        return True
    source = source - {"null"} or source
    if "number" in target:
        target = target | NUMERIC
    return bool(source & target)


Target = ToolSpec | ResourceSpec


def target_of(tree: SpecTree, service: str, link: Link) -> Target | None:
    """The tool (any service) or resource (this service) a link names, or None when there is none."""
    if link.kind == "tool":
        return next((t for t in tree.all_tools() if t.name == link.target), None)
    svc = next((s for s in tree.services if s.name == service), None)
    return next((r for r in svc.resources if r.name == link.target), None) if svc else None


def target_field(target: Target, name: str) -> dict[str, Any] | None:
    """The schema of a target's input field (a URI parameter is a non-empty string)."""
    if isinstance(target, ResourceSpec):
        return {"type": "string"} if name in target.params else None
    found = (target.input_schema.get("properties") or {}).get(name)
    return found if isinstance(found, dict) else None


def _sources(tree: SpecTree) -> Iterator[tuple[Target, dict[str, Any] | None, dict[str, Any]]]:
    for svc in tree.services:
        for tool in svc.tools:
            yield tool, tool.output_schema, tool.input_schema
        for res in svc.resources:
            params = {"type": "object", "properties": {p: {"type": "string"} for p in res.params}}
            yield res, res.output_schema, params


def check_links(tree: SpecTree) -> Iterator[Problem]:
    """KT120: every link names an existing tool or resource, each field one of its inputs, each source a
    field this result (or input) declares, of a type the target field takes; a resource's URI parameters
    all filled."""
    root = tree.root.parent
    for source, output, inputs in _sources(tree):
        rel = source.source.resolve().relative_to(root).as_posix()
        for i, link in enumerate(source.links):
            where = f"/links/{i}"
            target = target_of(tree, source.service, link)
            if target is None:
                scope = "" if link.kind == "tool" else f" in service {source.service}"
                yield Problem(rel, where, RULE, f"no {link.kind} {link.target!r}{scope}")
                continue
            for name, text in link.fields:
                want = target_field(target, name)
                if want is None:
                    yield Problem(rel, f"{where}/fields/{name}", RULE, f"{link.target} has no input field {name!r}")
                    continue
                yield from _check_source(Source.parse(text), want, output, inputs, rel, f"{where}/fields/{name}")
            if isinstance(target, ResourceSpec):
                missing = sorted(set(target.params) - {name for name, _ in link.fields})
                if missing:
                    yield Problem(rel, f"{where}/fields", RULE, f"URI parameters of {target.uri} not filled: {missing}")


def _check_source(
    source: Source, want: dict[str, Any], output: JsonValue, inputs: JsonValue, rel: str, where: str
) -> Iterator[Problem]:
    for path in source.paths:
        have = schema_at(inputs if path.from_input else output, path)
        if have is None:
            side = "input" if path.from_input else "result"
            yield Problem(rel, where, RULE, f"{source.text!r}: not a field of this {side}")
            return
        if not source.template and not agree(types_of(have), types_of(want)):
            yield Problem(
                rel,
                where,
                RULE,
                f"{source.text!r} is {sorted(types_of(have) or [])}, the field takes {sorted(types_of(want) or [])}",
            )
    if source.template and source.fans_out:
        yield Problem(rel, where, RULE, f"{source.text!r}: a text takes one value per path, not any item of an array")
    if source.template and not agree({"string"}, types_of(want)):
        yield Problem(rel, where, RULE, f"{source.text!r} is a string, the field takes {sorted(types_of(want) or [])}")


def openapi_links(tree: SpecTree, source: Target) -> dict[str, Any]:
    """The OpenAPI 3.1 `links` of the source's 200 response. A path through an array becomes a `*` wildcard,
    which schemathesis evaluates (one item drawn per step) only on links marked `x-schemathesis.is_inferred`."""
    out: dict[str, Any] = {}
    for link in source.links:
        target = target_of(tree, source.service, link)
        if target is None:
            continue
        paths = {name: Source.parse(text) for name, text in link.fields}
        entry: dict[str, Any] = {"operationId": target.operation_id}
        if link.description:
            entry["description"] = link.description.strip()
        if isinstance(target, ResourceSpec):
            if paths:
                entry["parameters"] = {f"path.{name}": p.expression() for name, p in paths.items()}
        elif paths:
            placed = {param.property: param for param in target.http_shape.params}  # a REST-shaped target
            parameters = {
                f"{placed[n].location}.{placed[n].name}": p.expression() for n, p in paths.items() if n in placed
            }
            body = {name: p.expression() for name, p in paths.items() if name not in placed}
            if parameters:
                entry["parameters"] = parameters
            if body:
                entry["requestBody"] = body
        if any(p.fans_out for p in paths.values()):
            entry["x-schemathesis"] = {"is_inferred": True, "merge_body": True}
        out[_link_name(link, out)] = entry
    return out


def _link_name(link: Link, taken: dict[str, Any]) -> str:
    name = "".join(part.capitalize() for part in link.target.split("_"))
    suffix = 2
    while name in taken:
        name = f"{name}{suffix}"
        suffix += 1
    return name


def next_line(links: list[Link]) -> str:
    """The compact form MCP clients read in a description: `Next: confirm_duplicate(check_id=candidates[].check_id)`."""
    if not links:
        return ""
    steps = []
    for link in links:
        args = ", ".join(f"{name}={text}" for name, text in link.fields)
        what = link.target if link.kind == "tool" else f"resource {link.target}"
        steps.append(f"{what}({args})")
    return "Next: " + "; ".join(steps) + "."
