"""The AttendanceRule JSON Schema, read from the spec (the single source of truth)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

TYPES_FILE = Path(__file__).resolve().parents[2] / "specs" / "attendance" / "types" / "attendance.json"


@cache
def types_document() -> dict[str, Any]:
    return json.loads(TYPES_FILE.read_text(encoding="utf-8"))


@cache
def validator(definition: str) -> Any:
    """A validator for one `$defs` entry of the types file (refs resolved inside it)."""
    doc = types_document()
    return jsonschema_rs.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": doc["$defs"]})


def schema_errors(definition: str, instance: Any, limit: int = 5) -> list[str]:
    """Readable schema problems, `path: message`, at most `limit`."""
    out = []
    for err in validator(definition).iter_errors(instance):
        path = "/".join(str(p) for p in err.instance_path) or "<rule>"
        out.append(f"{path}: {err.message}")
        if len(out) >= limit:
            break
    return out
