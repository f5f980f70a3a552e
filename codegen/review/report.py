"""Render a Review as Markdown, ready to paste into a pull request."""

from __future__ import annotations

from itertools import groupby

from codegen.review.findings import Finding, Review
from codegen.review.rules import EXCEPTIONS_FILE, SURFACES, Exception_

RULES_DOC = "codegen/review/rules.yaml"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _severity(f: Finding) -> str:
    if f.severity != "breaking":
        return f.severity
    if f.excused is not None:
        return f"breaking (excepted: {_cell(f.excused)})"
    if f.allowed_by is not None:
        return f"breaking (allowed by the {_cell(f.allowed_by)})"
    return "**breaking**"


def subject_verdict(findings: list[Finding]) -> str:
    """One subject's verdict, for its heading."""
    blocking = sum(f.blocking for f in findings)
    breaking = [f for f in findings if f.severity == "breaking"]
    if blocking:
        return f"**FAIL**: {blocking} breaking change(s) not allowed"
    if breaking:
        how = sorted({"excepted" if f.excused is not None else "allowed by a major version" for f in breaking})
        return f"OK: {len(breaking)} breaking change(s), {' / '.join(how)}"
    if any(f.severity == "non-breaking" for f in findings):
        return "OK: non-breaking"
    return "OK: text only"


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
        if review.unused_exceptions:
            reasons.append(f"exceptions that match nothing in specs/{EXCEPTIONS_FILE}")
        if review.head_problems:
            reasons.append("HEAD's specs do not pass codegen lint")
        verdict = "**FAIL**: " + "; ".join(reasons)
    return f"{verdict} — {counts}{where}."


def _exception(e: Exception_) -> str:
    where = (
        f"`{e.tool}`" + (f" field `{e.field}`" if e.field else "") + (f" (service `{e.service}`)" if e.service else "")
    )
    return f"`{e.rule}` on {where}: {_cell(e.reason)}"


def render(review: Review) -> str:
    """The review as Markdown: a summary, then each service's verdict and its findings by severity."""
    lines = [f"## Spec review: `{review.base}` → `{review.head}`", "", _summary(review), ""]
    if review.head_note:
        lines += [review.head_note, ""]
    by_service = {k: list(g) for k, g in groupby(review.findings, key=lambda f: f.service)}
    for name, state in sorted(review.services.items()):
        found = by_service.get(name, [])
        if not found:
            continue
        versions = f"{state.base_version or '—'} → {state.head_version or '—'}"
        bumps = " and ".join(b for b in (state.path_bump, state.version_bump) if b)
        if state.unexcused:
            head = f"**FAIL**: {state.unexcused} breaking change(s) nothing allows ({state.needs};"
            head += f" any can be excepted with a reason in specs/{EXCEPTIONS_FILE})"
        elif state.breaking:
            parts = [f"{state.excused} excepted"] if state.excused else []
            parts += [f"{state.allowed} allowed by the {bumps}"] if state.allowed else []
            head = f"OK ({state.breaking} breaking: {', '.join(parts)})"
        else:
            head = "OK"
        lines += [f"### Service `{name}` ({versions}) — {head}", ""]
        for (kind, subject), group in groupby(found, key=lambda f: (f.kind, f.subject)):
            title = {"service": "Service", "tool": "Tool", "resource": "Resource"}[kind]
            items = list(group)
            lines += [
                f"#### {title} `{subject}` — {subject_verdict(items)}",
                "",
                "| Rule | Surface | Severity | Detail |",
                "|---|---|---|---|",
            ]
            for f in items:
                lines.append(f"| `{f.rule}` | {SURFACES[f.surface]} | {_severity(f)} | {_cell(f.detail)} |")
            lines.append("")
    if review.exception_problems:
        lines += [f"### Invalid entries in specs/{EXCEPTIONS_FILE}", ""]
        lines += [f"- {p}" for p in review.exception_problems]
        lines.append("")
    if review.unused_exceptions:
        lines += ["### New exceptions that matched nothing (fix or remove them: the review fails)", ""]
        lines += [f"- {_exception(e)}" for e in review.unused_exceptions]
        lines.append("")
    if review.head_problems:
        lines += [
            f"### `{review.head}` does not pass codegen lint (`python -m codegen --lint`); tools that failed to"
            " load count as removed",
            "",
        ]
        lines += [f"- `{p}`" for p in review.head_problems]
        lines.append("")
    if review.base_problems:
        lines += [f"<details><summary>`{review.base}` has {len(review.base_problems)} spec problem(s)</summary>", ""]
        lines += [f"- `{p}`" for p in review.base_problems]
        lines += ["", "</details>", ""]
    lines += [
        f"<sub>Rules: kumitate's `{RULES_DOC}`. Compatibility policy: additions are fine, breaking changes go"
        " to /v2: a new /vN base path allows HTTP changes, a major `version` Python API changes; MCP tool names"
        " carry no version, so MCP and HTTP+MCP"
        f" changes need an exception `{{rule, tool, reason, field?}}` in `specs/{EXCEPTIONS_FILE}` (or a new"
        " tool name).</sub>",
    ]
    return "\n".join(lines) + "\n"
