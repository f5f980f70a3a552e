"""Pydantic v2 models per service, through datamodel-code-generator.

Each service becomes one JSON Schema document whose `$defs` hold the shared
types (from types/*.json, under their own names) and one `<Tool>Input` /
`<Tool>Output` / `<Resource>Resource` entry per tool and resource, so shared
types stay shared classes instead of being copied into every tool.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from datamodel_code_generator import DataModelType, InputFileType, LiteralType, PythonVersion, generate
from datamodel_code_generator.enums import DefaultValueType
from datamodel_code_generator.format import Formatter

from codegen import naming
from codegen.refs import JsonValue, dereference, load_document, split_ref
from codegen.specs import ServiceSpec

OPTIONS: dict[str, Any] = {
    "input_file_type": InputFileType.JsonSchema,
    "output_model_type": DataModelType.PydanticV2BaseModel,
    "target_python_version": PythonVersion.PY_311,
    "use_annotated": True,
    "field_constraints": True,
    "disable_timestamp": True,
    "enum_field_as_literal": LiteralType.Off,
    "deserialize_default_values": [DefaultValueType.Enum],
    "strict_nullable": True,
    "collapse_root_models": True,
    "formatters": [Formatter.BUILTIN],
    "use_double_quotes": True,
    "use_schema_description": True,
    "use_field_description": True,
    "enable_version_header": False,
    "use_title_as_name": True,
    # formats whose pydantic types need a package kumitate does not install (python-ulid, email-validator):
    # plain strings in the models; the JSON Schema check asserts the format where policy.assert_formats says
    "type_mappings": ["string+ulid=string", "string+email=string", "string+idn-email=string"],
}

BUNDLE_TITLE = "KumitateSpecBundle"
"""The bundle document's own title. The generator makes a `RootModel[Any]` of the document itself,
which is no type of the service: render() takes it out again."""

_BUNDLE_ROOT = re.compile(
    rf'\n\nclass {BUNDLE_TITLE}\(RootModel\[Any\]\):\n    root: Annotated\[Any, Field\(title="{BUNDLE_TITLE}"\)\]\n'
)


def _rewrite(node: object, base_file: Path, root: Path, defs: set[str]) -> object:
    """Point refs to shared `$defs` at the bundle's `#/$defs/Name`; inline the rest."""
    if isinstance(node, list):
        return [_rewrite(v, base_file, root, defs) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        target_file, fragment = split_ref(ref, base_file, root, "")
        parts = fragment.strip("/").split("/")
        if len(parts) == 2 and parts[0] == "$defs" and parts[1] in defs and target_file.parent.name == "types":
            rest = {k: _rewrite(v, base_file, root, defs) for k, v in node.items() if k != "$ref"}
            return {"$ref": f"#/$defs/{parts[1]}", **rest}
        return _rewrite(dereference(node, base_file, root), base_file, root, defs)
    return {k: _rewrite(v, base_file, root, defs) for k, v in node.items() if k not in ("$defs", "$schema", "$id")}


def _is_bare_ref(schema: dict[str, Any]) -> bool:
    return set(schema) - {"description", "title"} == {"$ref"}


def _shared_target(schema: dict[str, Any], base_file: Path, root: Path, defs: set[str]) -> str | None:
    """The shared type a bare-ref tool input/output names, if it names one."""
    if not _is_bare_ref(schema):
        return None
    target_file, fragment = split_ref(schema["$ref"], base_file, root, "")
    parts = fragment.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "$defs" and parts[1] in defs and target_file.parent.name == "types":
        return parts[1]
    return None


def _top_level(schema: dict[str, Any], base_file: Path, root: Path, defs: set[str]) -> dict[str, Any]:
    """A tool's input/output: if it is a bare ref, copy the target so the document names it after the tool
    (OpenAPI shows `<Tool>Output`); the Python module makes that name an alias instead (aliases())."""
    if _is_bare_ref(schema):
        target_file, fragment = split_ref(schema["$ref"], base_file, root, "")
        target = _node_at(target_file, fragment.strip("/").split("/") if fragment.strip("/") else [])
        merged = copy.deepcopy(_schema_object(target, target_file))
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        return _schema_object(_rewrite(merged, target_file, root, defs), target_file)
    return _schema_object(_rewrite(schema, base_file, root, defs), base_file)


def _node_at(path: Path, parts: list[str]) -> object:
    """The node at `parts` (a JSON pointer's tokens) of a spec file: a `$defs` entry the spec check has found."""
    node = load_document(path)
    for part in parts:
        if not isinstance(node, dict):
            raise TypeError(f"{path}: /{'/'.join(parts)} passes through a non-object")
        node = node[part]
    return node


def _schema_object(node: object, path: Path) -> dict[str, Any]:
    """`node`, which a model's schema must be: a JSON object (a boolean schema has no model)."""
    if not isinstance(node, dict):
        raise TypeError(f"{path}: a model's schema must be an object, not {node!r:.80}")
    return dict(node)


def _owners(svc: ServiceSpec) -> dict[str, Path]:
    """Each shared type's name -> the types/*.json file that defines it."""
    owners: dict[str, Path] = {}
    for stem, doc in sorted(svc.types.items()):
        path = svc.source_dir / "types" / f"{stem}.json"
        for name in (doc or {}).get("$defs", {}):
            owners[name] = path
    return owners


def aliases(svc: ServiceSpec, root: Path) -> dict[str, str]:
    """`<Tool>Input`/`<Tool>Output`/`<Resource>Resource` name -> the shared type it is a bare ref to.

    In Python such a name is an alias of the shared class (`GetMonthlyHouseholdOutput = MonthlyHousehold`),
    not a twin class with the same fields: a handler returns the shared type and satisfies both names."""
    names = set(_owners(svc))
    tops = [(naming.input_model(t.name), t.raw["input"], t.source) for t in svc.tools]
    tops += [(naming.output_model(t.name), t.raw["output"], t.source) for t in svc.tools]
    tops += [
        (naming.resource_model(r.name), r.raw["output"], r.source)
        for r in svc.resources
        if r.is_json and "output" in r.raw
    ]
    out = {}
    for name, schema, source in tops:
        target = _shared_target(schema, source, root, names)
        if target is not None and target != name:
            out[name] = target
    return dict(sorted(out.items()))


def bundle(svc: ServiceSpec, root: Path) -> dict[str, Any]:
    """The single schema document codegen feeds to datamodel-code-generator (and OpenAPI its components)."""
    shared: dict[str, Any] = {}
    owners = _owners(svc)
    names = set(owners)
    for name, path in sorted(owners.items()):
        shared[name] = _rewrite(_node_at(path, ["$defs", name]), path, root, names)
    for tool in svc.tools:
        shared[naming.input_model(tool.name)] = _top_level(tool.raw["input"], tool.source, root, names)
        shared[naming.output_model(tool.name)] = _top_level(tool.raw["output"], tool.source, root, names)
    for res in svc.resources:
        if res.is_json and "output" in res.raw:
            shared[naming.resource_model(res.name)] = _top_level(res.raw["output"], res.source, root, names)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": BUNDLE_TITLE,
        "$defs": shared,
    }


NULL_MARK = "x-kumitate-refuse-null"
REFUSE_NULL = "kumitate.nulls.refuse_null"
"""The validator of an optional property the schema does not let be null (the generator types it `X | None`)."""


def _admits_null(schema: JsonValue, defs: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    if schema is True or (
        isinstance(schema, dict) and not ({"type", "$ref", "anyOf", "enum", "const"} & schema.keys())
    ):
        return True
    if not isinstance(schema, dict):
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in seen:
        return _admits_null(defs.get(ref.removeprefix("#/$defs/"), True), defs, seen | {ref})
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or None in schema.get("enum", [1]):
        return True
    return any(_admits_null(option, defs, seen) for option in schema.get("anyOf", []))


def _mark_null_refused(node: object, defs: dict[str, Any]) -> bool:
    """Mark (in place) each optional property without a default that refuses null; True if any was."""
    if isinstance(node, list):
        return any([_mark_null_refused(v, defs) for v in node])
    if not isinstance(node, dict):
        return False
    found = any([_mark_null_refused(v, defs) for v in node.values()])
    props = node.get("properties")
    if isinstance(props, dict):
        required = set(node.get("required", []))
        for name, sub in props.items():
            if name not in required and isinstance(sub, dict) and "default" not in sub and not _admits_null(sub, defs):
                sub[NULL_MARK] = True
                found = True
    return found


def _null_refusing_fields(code: str) -> dict[str, list[str]]:
    """Class -> the fields the first pass marked (their annotation carries NULL_MARK)."""
    out: dict[str, list[str]] = {}
    for cls in ast.parse(code).body:
        if not isinstance(cls, ast.ClassDef):
            continue
        fields = [s for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
        for stmt in fields:
            if NULL_MARK in ast.unparse(stmt.annotation):
                out.setdefault(cls.name, []).append(ast.unparse(stmt.target))
    return out


def _generate(document: dict[str, Any], header: str, extra: dict[str, Any]) -> str:
    """The generator's module of `document`: OPTIONS and a pass's `extra` options (the generator's keyword names)."""
    code = generate(
        json.dumps(document, ensure_ascii=False, sort_keys=True), custom_file_header=header, **OPTIONS, **extra
    )
    assert isinstance(code, str)
    return code


def _with_null_refusal(document: dict[str, Any], header: str, extra: dict[str, Any]) -> str:
    """The generated module, with `refuse_null` on every optional property that refuses null.

    The generator knows no such option: a first pass marks those properties (a field extra in the
    annotation), which names their classes and fields; the second attaches the validator to them
    through the generator's `validators` option."""
    marked = copy.deepcopy(document)
    if not _mark_null_refused(marked["$defs"], marked["$defs"]):
        return _generate(document, header, extra)
    fields = _null_refusing_fields(_generate(marked, header, {**extra, "field_extra_keys": {NULL_MARK}}))
    validators = {
        cls: {"validators": [{"fields": names, "function": REFUSE_NULL, "mode": "before"}]}
        for cls, names in sorted(fields.items())
    }
    code = _generate(document, header, {**extra, "validators": validators})
    missing = set(fields) - {c.name for c in ast.parse(code).body if isinstance(c, ast.ClassDef)}
    if missing:
        raise RuntimeError(f"the two generator passes name classes differently: {sorted(missing)}")
    return code


def _aliased_classes(code: str) -> list[str]:
    """The classes with a field renamed for Python (`from` -> `from_ = Field(alias="from")`): they get
    `populate_by_name`, so handlers can write `Model(from_=...)`. The wire still takes only the JSON
    name: kumitate.intake validates with `by_name=False`."""
    return sorted(
        cls.name
        for cls in ast.parse(code).body
        if isinstance(cls, ast.ClassDef)
        and any(isinstance(s, ast.AnnAssign) and "alias=" in ast.unparse(s.annotation) for s in cls.body)
    )


def render(svc: ServiceSpec, root: Path, header: str) -> str:
    """The service's pydantic models module: its bundled schemas through datamodel-code-generator, a
    model that is a bare ref to a shared type as an alias of it, and an explicit null refused where a
    field may only be left out."""
    document = bundle(svc, root)
    alias_of = aliases(svc, root)
    for name in alias_of:
        del document["$defs"][name]
    code = _with_null_refusal(document, header, {})
    aliased = _aliased_classes(code)
    if aliased:
        by_name = defaultdict(dict, {cls: {"allow_population_by_field_name": True} for cls in aliased})
        code = _with_null_refusal(document, header, {"extra_template_data": by_name})
    code, found = _BUNDLE_ROOT.subn("", code)
    if found != 1:
        raise RuntimeError(f"the generator no longer emits the bundle root class {BUNDLE_TITLE} as expected")
    if alias_of:
        code += "\n\n" + "".join(f"{name} = {target}\n" for name, target in alias_of.items())
    return code
