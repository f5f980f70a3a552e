"""Which household resources a committed write changed, told to MCP subscribers (`CallContext.changed`).

A write (an import, a duplicate mark set or lifted) knows the months whose rows it changed; the
resources built from the category tree and the months with data are compared as a `Shape` read in
the write's transaction before and after it, so a subscriber hears of a resource only when it
changed: `data://months/{month}` for every month whose rows changed, `data://category_trend_summary`
whenever any month did (its moving averages reach back two years), `data://available_months` and
`data://category_hierarchy` when those lists differ, `data://categories/{category}` when the
category's place in the tree or whether it holds spending differs. Called after the commit, so a
failed call says nothing; outside a call (the start-up import) there is nobody to tell.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kumitate.context import current_call

__all__ = ["Shape", "announce", "changed"]


@dataclass(frozen=True, slots=True)
class Shape:
    """What the whole-data resources are built from: the tree, the names that hold spending, the months."""

    tree: dict[str, list[str]]
    spending: frozenset[str]
    months: tuple[str, ...]

    def categories(self) -> dict[str, tuple[tuple[str, ...], tuple[str, ...], bool]]:
        """Each name's entry in data://categories/{category}: (its 中項目, the 大項目 it sits under, spending)."""
        names = {*self.tree, *(minor for minors in self.tree.values() for minor in minors)}
        return {
            name: (
                tuple(self.tree.get(name, ())),
                tuple(sorted(major for major, minors in self.tree.items() if name in minors)),
                name in self.spending,
            )
            for name in names
        }


def changed(before: Shape, after: Shape, months: Iterable[str]) -> list[tuple[str, dict[str, str]]]:
    """The resources (name, URI parameters) a write changed, from its shapes and the months it touched."""
    touched = sorted(set(months))
    out: list[tuple[str, dict[str, str]]] = []
    if before.months != after.months:
        out.append(("available_months", {}))
    if before.tree != after.tree:
        out.append(("category_hierarchy", {}))
    if touched:
        out.append(("category_trend_summary", {}))
    out += [("month", {"month": month}) for month in touched]
    old, new = before.categories(), after.categories()
    out += [
        ("category", {"category": name}) for name in sorted(old.keys() | new.keys()) if old.get(name) != new.get(name)
    ]
    return out


def announce(before: Shape, after: Shape, months: Iterable[str]) -> None:
    """Tell the current call's subscribers what a committed write changed (see `changed`)."""
    call = current_call()
    if call is None:
        return
    for name, params in changed(before, after, months):
        call.changed(name, **params)
