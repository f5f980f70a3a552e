"""Pydantic v2 models per service, through datamodel-code-generator.

Each service becomes one JSON Schema document whose `$defs` hold the shared
types (from types/*.json, under their own names) and one `<Tool>Input` /
`<Tool>Output` / `<Resource>Resource` entry per tool and resource, so shared
types stay shared classes instead of being copied into every tool.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from datamodel_code_generator import DataModelType, InputFileType, LiteralType, PythonVersion, generate
from datamodel_code_generator.enums import DefaultValueType
from datamodel_code_generator.format import Formatter

from codegen import naming
from codegen.refs import dereference, load_document, split_ref
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
}


def _rewrite(node: Any, base_file: Path, root: Path, defs: set[str]) -> Any:
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


def _top_level(schema: dict[str, Any], base_file: Path, root: Path, defs: set[str]) -> dict[str, Any]:
    """A tool's input/output: if it is a bare ref, copy the target so the class gets the tool's name."""
    if set(schema) - {"description", "title"} == {"$ref"}:
        target_file, fragment = split_ref(schema["$ref"], base_file, root, "")
        target = load_document(target_file)
        for part in fragment.strip("/").split("/") if fragment.strip("/") else []:
            target = target[part]
        merged = copy.deepcopy(target)
        merged.update({k: v for k, v in schema.items() if k != "$ref"})
        return dict(_rewrite(merged, target_file, root, defs))
    return dict(_rewrite(schema, base_file, root, defs))


def bundle(svc: ServiceSpec, root: Path) -> dict[str, Any]:
    """The single schema document codegen feeds to datamodel-code-generator."""
    shared: dict[str, Any] = {}
    owners: dict[str, Path] = {}
    for stem, doc in sorted(svc.types.items()):
        path = svc.source_dir / "types" / f"{stem}.json"
        for name in (doc or {}).get("$defs", {}):
            owners[name] = path
    names = set(owners)
    for name, path in sorted(owners.items()):
        shared[name] = _rewrite(load_document(path)["$defs"][name], path, root, names)
    for tool in svc.tools:
        shared[naming.input_model(tool.name)] = _top_level(tool.raw["input"], tool.source, root, names)
        shared[naming.output_model(tool.name)] = _top_level(tool.raw["output"], tool.source, root, names)
    for res in svc.resources:
        if res.is_json and "output" in res.raw:
            shared[naming.resource_model(res.name)] = _top_level(res.raw["output"], res.source, root, names)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{naming.pascal(svc.name)}Models",
        "$defs": shared,
    }


def render(svc: ServiceSpec, root: Path, header: str) -> str:
    document = bundle(svc, root)
    code = generate(json.dumps(document, ensure_ascii=False, sort_keys=True), custom_file_header=header, **OPTIONS)
    assert isinstance(code, str)
    return code
