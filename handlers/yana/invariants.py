"""Yana workflow invariants (kumitate.invariants): an ingested label is found by its brand."""

from __future__ import annotations

from typing import Any

from kumitate.invariants import Caller, Invariant, Step

MAX_K = 20


def _found_by_brand(step: Step, call: Caller, _memory: dict[str, Any]) -> str | None:
    brand = str(step.arguments.get("brand_name") or "").strip()
    result = step.result or {}
    if not brand or result.get("dedup"):
        return None  # nothing to search by; a duplicate image keeps the stored label (its own brand)
    found = call("search", {"query_text": brand, "k": MAX_K, "sort_by": "recency"})
    if not found.ok or found.result is None:
        return f"search by the brand just ingested failed with {found.error}"
    ids = [hit.get("id") for hit in found.result.get("hits", [])]
    if result.get("id") not in ids:
        return f"label {result.get('id')} (brand {brand!r}) is not among the newest hits for its brand: {ids}"
    return None


INVARIANTS = (
    Invariant(
        "ingested_label_found_by_brand",
        "A label ingested as new is among the newest search hits for its brand name.",
        frozenset({"ingest"}),
        _found_by_brand,
    ),
)
