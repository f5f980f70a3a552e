"""The imported service on disk: specs/<svc>/ (service, tools, types, the report), handlers/<svc>/, and the
codes the import added to specs/errors.yaml. Nothing that exists is overwritten."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from codegen import refs
from codegen.importer import handlers
from codegen.importer.catalogue import Catalogue
from codegen.importer.report import REPORT_FILE, Report
from codegen.importer.schema import in_tool


class _Dumper(refs.YamlDumper):
    """Block style, text with newlines as `|` blocks, keys in the order written."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value and not value.endswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(doc: object) -> str:
    """YAML as a person writes a spec."""
    return refs.dump_yaml(doc, _Dumper)


def types_document(service: str, defs: dict[str, Any]) -> str:
    """specs/<svc>/types/<svc>.json: the document's components/schemas as `$defs`."""
    doc = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{service}.json",
        "title": f"{service} types",
        "$defs": defs,
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def service_files(
    specs: Path,
    handlers_dir: Path,
    service: dict[str, Any],
    tools: list[tuple[dict[str, Any], str]],
    defs: dict[str, Any],
    forward: str | None,
) -> dict[Path, str]:
    """Every file of the service, path -> text; `tools` are (spec, operation) in document order."""
    name = service["name"]
    types_file = f"{name}.json"
    files: dict[Path, str] = {specs / name / "service.yaml": dump(service)}
    if defs:
        files[specs / name / "types" / types_file] = types_document(name, defs)
    for spec, _ in tools:
        files[specs / name / "tools" / f"{spec['name']}.yaml"] = dump(in_tool(spec, types_file))
    listed = [{"name": spec["name"], "operation": operation} for spec, operation in tools]
    prefix = str((service.get("http") or {}).get("base_path", ""))
    for rel, text in handlers.files(name, listed, forward, service["title"], prefix).items():
        files[handlers_dir / name / rel] = text
    return files


def write(files: dict[Path, str], report: Report, catalogue: Catalogue, specs: Path) -> list[Path]:
    """Write the service, its report and the catalogue's new codes; the paths written."""
    report_path = specs / report.service / REPORT_FILE
    files = {**files, report_path: report.markdown()}
    for path in files:
        if path.exists():
            raise FileExistsError(f"{path} already exists; nothing was changed")
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    catalogue.append()
    return [*files, catalogue.path] if catalogue.added else list(files)
