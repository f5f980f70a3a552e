"""The output schema a tool advertises over MCP, without the descriptions a model gains nothing from.

A `tools/list` entry carries the tool's inputSchema and outputSchema side by side, and every token of
it is paid by every conversation that loads the tool. Two kinds of output-field description add
nothing there, so the advertised outputSchema leaves them out:

- text the same entry's inputSchema already carries word for word (save_attendance_rule echoes the
  AttendanceRule it takes, with every field and enum explained a second time);
- a description that only restates its field's name (`thread_id`: "Thread id.", `columns[]`: "A
  column name.").

Only MCP sees the trimmed schema (and the pipeline, which validates against it: descriptions never
change validation). The spec keeps every description: OpenAPI, the generated models, the reference
docs and the readiness lint (codegen.readiness) read the spec's full schemas. Input schemas are
advertised whole: a model fills them in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from codegen import shared

FILLER = frozenset({"a", "an", "the", "one", "of", "its", "this", "that", "each", "as", "in", "name"})
"""Words that say nothing about a field; a description made of them and the field's own words restates it."""
SYNONYMS = {"identifier": "id", "ids": "id", "identifiers": "id"}
_WORD = re.compile(r"[A-Za-z]+|[^\x00-\x7f]+|\d+")


def _words(text: str) -> set[str]:
    out = set()
    for word in _WORD.findall(text):
        word = SYNONYMS.get(word.lower(), word.lower())
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return out


def restates(description: str, names: list[str]) -> bool:
    """Does `description` say no more than the names of the field and the fields it sits in?"""
    said = _words(description) - FILLER
    known = set().union(*(_words(re.sub(r"(?<=[a-z])(?=[A-Z])|_", " ", n)) for n in names)) if names else set()
    return bool(said) and said <= known


def descriptions(schema: dict[str, Any]) -> Iterator[str]:
    """Every description of a schema and its subschemas."""
    if isinstance(schema.get("description"), str):
        yield schema["description"]
    for _, sub in shared.children(schema):
        yield from descriptions(sub)


def output_schema(output: dict[str, Any], advertised_input: dict[str, Any]) -> dict[str, Any]:
    """`output` (as hoisted for the wire) without the descriptions the module docstring lists."""
    known = set(descriptions(advertised_input))

    def trim(node: dict[str, Any], names: list[str]) -> dict[str, Any]:
        out = dict(node)
        text = out.get("description")
        if isinstance(text, str) and (text in known or restates(text, names)):
            del out["description"]
        for key in shared.SCHEMA_MAPS:
            if isinstance(out.get(key), dict):
                inner = names if key == "$defs" else None
                out[key] = {
                    k: trim(v, [*names, k] if inner is None else [k]) if isinstance(v, dict) else v
                    for k, v in out[key].items()
                }
        for key in shared.SCHEMA_KEYS:
            if isinstance(out.get(key), dict):
                out[key] = trim(out[key], names)
        for key in shared.SCHEMA_LISTS:
            if isinstance(out.get(key), list):
                out[key] = [trim(v, names) if isinstance(v, dict) else v for v in out[key]]
        return out

    return trim(output, [])
