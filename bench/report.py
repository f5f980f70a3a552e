"""The Markdown table a benchmark prints its rows as (docs/benchmarks.md quotes them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A header row of `columns`, the separator, then one line per row."""
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row) + " |")
