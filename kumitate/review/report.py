"""Render a Review as Markdown, ready to paste into a pull request."""

from __future__ import annotations

from itertools import groupby

from kumitate.review.diff import Finding, Review
from kumitate.review.rules import EXCEPTIONS_FILE, SURFACES

RULES_DOC = "kumitate/review/rules.yaml"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _severity(f: Finding) -> str:
    if f.severity != "breaking":
        return f.severity
    if f.excused is not None:
        return f"breaking (excepted: {_cell(f.excused)})"
    return "**breaking**"


def _summary(review: Review) -> str:
    counts = (
        f"{review.count('breaking')} breaking, {review.count('non-breaking')} non-breaking, {review.count('info')} info"
    )
    changed = sorted({f.service for f in review.findings})
    where = f" in {len(changed)} service(s): {', '.join(f'`{s}`' for s in changed)}" if changed else ""
    if not review.findings:
        verdict = "**PASS**: no surface changes"
    elif review.ok:
        verdict = "**PASS**"
    else:
        failing = [v.name for v in review.services.values() if not v.ok]
        reasons = []
        if failing:
            reasons.append(
                f"breaking changes without a major version or an exception in {', '.join(f'`{s}`' for s in failing)}"
            )
        if review.exception_problems:
            reasons.append(f"invalid entries in specs/{EXCEPTIONS_FILE}")
        if review.head_problems:
            reasons.append("HEAD's specs do not load cleanly")
        verdict = "**FAIL**: " + "; ".join(reasons)
    return f"{verdict} — {counts}{where}."


def render(review: Review) -> str:
    lines = [f"## Spec review: `{review.base}` → `{review.head}`", "", _summary(review), ""]
    by_service = {k: list(g) for k, g in groupby(review.findings, key=lambda f: f.service)}
    for name, verdict in sorted(review.services.items()):
        found = by_service.get(name, [])
        if not found:
            continue
        versions = f"{verdict.base_version or '—'} → {verdict.head_version or '—'}"
        if verdict.unexcused == 0:
            state = "OK" + (f" ({verdict.excused} breaking, all excepted)" if verdict.excused else "")
        elif verdict.bumped:
            state = f"OK: {verdict.unexcused} breaking change(s) allowed by the {verdict.bump_note}"
        else:
            state = (
                f"FAIL: {verdict.unexcused} breaking change(s); {verdict.bump_note}, or an exception with a"
                f" reason in specs/{EXCEPTIONS_FILE}"
            )
        lines += [f"### Service `{name}` ({versions}) — {state}", ""]
        for (kind, subject), group in groupby(found, key=lambda f: (f.kind, f.subject)):
            title = {"service": "Service", "tool": "Tool", "resource": "Resource"}[kind]
            lines += [
                f"**{title} `{subject}`**",
                "",
                "| Rule | Surface | Severity | Detail |",
                "|---|---|---|---|",
            ]
            for f in group:
                lines.append(f"| `{f.rule}` | {SURFACES[f.surface]} | {_severity(f)} | {_cell(f.detail)} |")
            lines.append("")
    if review.exception_problems:
        lines += [f"### Invalid entries in specs/{EXCEPTIONS_FILE}", ""]
        lines += [f"- {p}" for p in review.exception_problems]
        lines.append("")
    if review.unused_exceptions:
        lines += ["### Exceptions that matched nothing (remove them)", ""]
        lines += [f"- `{e.rule}` on `{e.tool}`: {_cell(e.reason)}" for e in review.unused_exceptions]
        lines.append("")
    if review.head_problems:
        lines += [f"### `{review.head}` does not load cleanly (tools that failed to load count as removed)", ""]
        lines += [f"- `{p}`" for p in review.head_problems]
        lines.append("")
    if review.base_problems:
        lines += [f"<details><summary>`{review.base}` has {len(review.base_problems)} spec problem(s)</summary>", ""]
        lines += [f"- `{p}`" for p in review.base_problems]
        lines += ["", "</details>", ""]
    lines += [
        f"<sub>Rules: `{RULES_DOC}`. Breaking changes need a major version of the service (version or /vN base"
        f" path) or an exception `{{rule, tool, reason}}` in `specs/{EXCEPTIONS_FILE}` (seed 001).</sub>",
    ]
    return "\n".join(lines) + "\n"
