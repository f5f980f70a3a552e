"""The check on a plain call graph: from each declared entry, every error site it can reach, and the ones
its spec does not declare. Knows nothing of mypy (`graph` is the vocabulary), so it is tested on graphs
built by hand."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from codegen.raises.graph import CallGraph, Overrides, Package, Ref, Site, Step

__all__ = ["Finding", "findings", "reach", "step"]


@dataclass(frozen=True)
class Finding:
    """An entry that can reach a site whose code its spec does not declare (or that has no method)."""

    service: str
    entry: str
    site: Site
    chain: tuple[str, ...]

    def __str__(self) -> str:
        where = f"{self.site.path}:{self.site.line}: {self.service}.{self.entry}"
        if not self.chain:
            return f"{where} has no method on the class create() returns, so its raises cannot be checked"
        return f"{where} can raise {self.site.code} (via {' -> '.join(self.chain)}), which its spec does not declare"


def step(graph: CallGraph, fn: str) -> tuple[list[str], list[Site]]:
    """The package functions `fn` can call, and the errors it makes itself: its steps with each override
    expanded and each variable's held steps read in place (once per body)."""
    calls: list[str] = []
    sites: list[Site] = []
    read: set[str] = set()

    def refer(target: str) -> None:
        if target in graph.functions:
            calls.append(target)
        if target in graph.held and target not in read:
            read.add(target)
            expand(graph.held[target])

    def expand(steps: Sequence[Step]) -> None:
        for item in steps:
            if isinstance(item, Site):
                sites.append(item)
            elif isinstance(item, Ref):
                refer(item.target)
            elif isinstance(item, Overrides):
                for sub in graph.below.get(item.owner, ()):
                    for target in graph.members.get(sub, {}).get(item.name, ()):
                        refer(target)

    function = graph.functions.get(fn)
    expand(function.steps if function else ())
    return list(dict.fromkeys(calls)), list(dict.fromkeys(sites))


def reach(
    graph: CallGraph, entry: str, steps: dict[str, tuple[list[str], list[Site]]] | None = None
) -> Iterator[tuple[Site, list[str]]]:
    """Every error site reachable from `entry`, each with a shortest chain of calls to it (function ids);
    `steps` keeps each function's step between calls."""
    parent: dict[str, str | None] = {entry: None}
    queue = deque([entry])
    seen: set[Site] = set()
    steps = {} if steps is None else steps
    while queue:
        fn = queue.popleft()
        if fn not in steps:
            steps[fn] = step(graph, fn)
        calls, sites = steps[fn]
        for site in sites:
            if site not in seen:
                seen.add(site)
                yield site, chain_to(parent, fn)
        for callee in calls:
            if callee not in parent:
                parent[callee] = fn
                queue.append(callee)


def chain_to(parent: dict[str, str | None], fn: str | None) -> list[str]:
    chain = []
    while fn is not None:
        chain.append(fn)
        fn = parent[fn]
    return chain[::-1]


def findings(graph: CallGraph, package: Package) -> Iterator[Finding]:
    """Each entry's reachable sites whose code `package` does not declare for it, and each entry that has
    no method (reported at the package's `__init__.py`)."""
    prefix = graph.module + "."
    steps: dict[str, tuple[list[str], list[Site]]] = {}
    for entry, method in sorted(graph.entries.items()):
        if method is None:
            yield Finding(package.service, entry, Site("", graph.init or "?", 1), ())
            continue
        allowed = package.declared[entry]
        for site, chain in reach(graph, method, steps):
            if site.code not in allowed:
                names = tuple(graph.functions[fn].name.removeprefix(prefix) for fn in chain)
                yield Finding(package.service, entry, site, names)
