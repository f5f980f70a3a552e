"""What the project's spec lint asks that an OpenAPI document seldom says, added on the way in.

KT112: an integer input declares its range (the `format`'s, int32 or int64, else int64's): a value past it
is a 400 at validation instead of an overflow further down; that narrows the wire contract, so it is
reported. A `format: float` number gets float's range the same way (the API, and a stub of it, refuse a
value past it). KT115: an enum inside a schema has a `title` that names its generated class (`PetStatus`);
that changes nothing on the wire.
"""

from __future__ import annotations

from typing import Any

from codegen.importer.names import pascal
from codegen.importer.report import OperationReport
from codegen.importer.schema import bound_numbers, title_enums


def types(defs: dict[str, Any], titles: set[str]) -> list[str]:
    """Adapt the shared types in place; the document-level notes."""
    notes: list[str] = []
    bounded = [name for name, schema in sorted(defs.items()) if bound_numbers(schema)]
    if bounded:
        notes.append(
            "integers (and floats) without a range got their format's (int32, else int64; float) as minimum"
            f" and maximum (lint KT112) in the shared types {', '.join(bounded)}"
        )
    titled = sum(title_enums(schema, name, True, titles) for name, schema in sorted(defs.items()))
    if titled:
        notes.append(f"{titled} enum(s) inside the shared types got a `title` (lint KT115; no wire change)")
    return notes


def tool(spec: dict[str, Any], report: OperationReport, titles: set[str]) -> None:
    """Adapt one tool's inline input and output in place."""
    owner = pascal(spec["name"])
    if bound_numbers(spec["input"]):
        report.adapted.append(
            "integer (and float) inputs without a range got their format's (int32, else int64; float) as minimum and"
            " maximum (lint KT112)"
        )
    count = title_enums(spec["input"], f"{owner}Input", True, titles)
    count += title_enums(spec["output"], f"{owner}Output", True, titles)
    if count:
        report.notes.append(f"{count} inline enum(s) got a `title` (lint KT115; no wire change)")
