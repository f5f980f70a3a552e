"""Output-size guard: fail with OUTPUT_TOO_LARGE, or trim the largest list and warn."""

from __future__ import annotations

import json
from typing import TypeVar

from kumitate.errors import ToolError

TRIM_WARNING = "output_trimmed_to_{limit}_bytes"
B = TypeVar("B")
"""A body: JSON data, which a trimmed copy keeps the shape of (an object stays an object)."""


def size_of(body: object) -> int:
    """The size in bytes of `body` as the wire sends it (compact UTF-8 JSON): what max_output_bytes limits."""
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def _largest_list(node: object, path: tuple[str | int, ...] = ()) -> tuple[tuple[str | int, ...], list[object]] | None:
    best: tuple[tuple[str | int, ...], list[object]] | None = None
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    if isinstance(node, list) and node:
        best = (path, node)
    for key, child in children:
        found = _largest_list(child, (*path, key))
        if found and (best is None or size_of(found[1]) > size_of(best[1])):
            best = found
    return best


def enforce(body: B, limit: int, mode: str, tool: str, reserve: int = 0) -> tuple[B, str | None]:
    """Return the body (possibly trimmed) and a warning, or raise OUTPUT_TOO_LARGE.

    `reserve`: bytes a trimmed body must leave free, for the warning the caller will add
    to it, so the body that is finally sent still fits in `limit`.
    """
    size = size_of(body)
    if size <= limit:
        return body, None
    hint = (
        f"the result of {tool} is {size} bytes, over its limit of {limit}; narrow the request "
        "(filters, a shorter date range, fewer rows or columns, or an export handle)"
    )
    if mode != "trim":
        raise ToolError(hint, code="OUTPUT_TOO_LARGE", details={"size_bytes": size, "limit_bytes": limit})
    trimmed = json.loads(json.dumps(body))
    while size_of(trimmed) > limit - reserve:
        found = _largest_list(trimmed)
        if found is None or not found[1]:
            raise ToolError(hint, code="OUTPUT_TOO_LARGE", details={"size_bytes": size, "limit_bytes": limit})
        found[1].pop()
    return trimmed, TRIM_WARNING.format(limit=limit)
