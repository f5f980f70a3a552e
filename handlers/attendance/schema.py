"""The attendance JSON Schemas, from the generated artefact (generated/attendance/schemas.json).

codegen writes each tool's input and output schema there, bundled with the `$defs` they use; the
package ships it, so nothing here reads specs/ at run time (which exists only in a source checkout).
Two named schemas are needed: AttendanceRule (what save stores) and ParseAttendanceIntentOutput
(what the optional LLM must answer).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema_rs

SCHEMAS_PACKAGE = "generated.attendance"


@cache
def tool_schemas() -> dict[str, Any]:
    tools: dict[str, Any] = json.loads(resources.files(SCHEMAS_PACKAGE).joinpath("schemas.json").read_text("utf-8"))[
        "tools"
    ]
    return tools


def _named(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as `{"$ref": "#/$defs/<name>", "$defs": …}`: the name stays visible (to a model reading it)."""
    defs = dict(schema.get("$defs", {}))
    defs.setdefault(name, {k: v for k, v in schema.items() if k != "$defs"})
    return {"$ref": f"#/$defs/{name}", "$defs": defs}


@cache
def named_schemas() -> dict[str, dict[str, Any]]:
    tools = tool_schemas()
    return {
        "AttendanceRule": _named("AttendanceRule", tools["get_attendance_rule"]["output"]),
        "ParseAttendanceIntentOutput": _named(
            "ParseAttendanceIntentOutput", tools["parse_attendance_intent"]["output"]
        ),
    }


def schema(definition: str) -> dict[str, Any]:
    return named_schemas()[definition]


@cache
def validator(definition: str) -> Any:
    return jsonschema_rs.Draft202012Validator(schema(definition))


def schema_errors(definition: str, instance: Any, limit: int = 5) -> list[str]:
    """Readable schema problems, `path: message`, at most `limit`."""
    out = []
    for err in validator(definition).iter_errors(instance):
        path = "/".join(str(p) for p in err.instance_path) or "<rule>"
        out.append(f"{path}: {err.message}")
        if len(out) >= limit:
            break
    return out
