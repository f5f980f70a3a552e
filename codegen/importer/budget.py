"""The imported service's tools/list token budget (specs/token-budget.yaml, lint KT205), and what the
agent-readiness lint says of it.

A whole API imported at once often costs more tokens than the default budget of one service; the import
measures what it wrote, and when it is over, records the service's own budget with the reason in a
comment (the budget file asks for one), so `codegen --check` passes and the cost is in plain sight.
Serving fewer tools at a time (toolsets, specs/toolsets.yaml) is the way to lower it.
"""

from __future__ import annotations

import math
from pathlib import Path

from codegen import docs, readiness, specs
from codegen.refs import parse_yaml

HEADROOM = 1.1
"""The budget recorded is the measured cost plus a tenth, so a small edit of a description still fits."""


def measure(specs_dir: Path, service: str) -> tuple[int, int, dict[str, int]]:
    """(cost, budget) of `service`'s tools/list, as the project's specs are now, and its agent-readiness
    findings (`kumitate lint`, KT201-KT204) by rule: what the document's own words leave an LLM to guess."""
    tree = specs.load(specs_dir)
    budgets, _ = docs.load_budget(tree)
    tools = next((svc.tools for svc in tree.services if svc.name == service), [])
    findings: dict[str, int] = {}
    for problem in readiness.lint(tree):
        if problem.file.startswith(f"specs/{service}/") and problem.rule != docs.BUDGET_RULE:
            findings[problem.rule] = findings.get(problem.rule, 0) + 1
    return docs.list_tokens(tools), docs.budget_for(budgets, service), findings


def record(specs_dir: Path, service: str, cost: int, source: str) -> tuple[Path, int]:
    """Give `service` a budget of its own in specs/token-budget.yaml; the file and the budget."""
    path = specs_dir / docs.BUDGET_FILE
    budget = int(math.ceil(cost * HEADROOM / 100) * 100)
    reason = f"  # {service}: imported whole from {source} by `kumitate import openapi` (~{cost} tokens)\n"
    line = f"  {service}: {budget}\n"
    text = path.read_text(encoding="utf-8") if path.is_file() else f"default: {docs.DEFAULT_BUDGET}\n"
    lines = text.splitlines(keepends=True)
    at = next((i for i, item in enumerate(lines) if item.rstrip() == "services:"), None)
    if at is None:
        candidate = text.rstrip("\n") + "\nservices:\n" + reason + line
    else:
        candidate = "".join([*lines[: at + 1], reason, line, *lines[at + 1 :]])
    doc = parse_yaml(candidate)
    if not (isinstance(doc, dict) and (doc.get("services") or {}).get(service) == budget):
        raise ValueError(f"{path}: cannot add the budget of {service} (add `{line.strip()}` under services:)")
    path.write_text(candidate, encoding="utf-8")
    return path, budget
