"""What a review produces: findings (one classified change each), per-service verdicts, the review.

A change is first a bare `Change` (rule, detail, caused_by) from the per-surface comparisons; compare()
in diff.py turns it into a Finding by naming its service and subject.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from codegen.review.rules import RULES, Exception_
from codegen.specs import Problem

SEVERITY_ORDER = {"breaking": 0, "non-breaking": 1, "info": 2}
KIND_ORDER = {"service": 0, "tool": 1, "resource": 2}


@dataclass(frozen=True, slots=True)
class Finding:
    """One difference between the two sides: its rule, where it is, what changed, and whether an
    exception or a version bump excuses it."""

    rule: str
    service: str
    kind: str
    """service | tool | resource"""
    subject: str
    """The tool, resource or service name (the name in HEAD when it exists)."""
    detail: str
    caused_by: str | None = None
    """The rule of the change this one follows from; an exception for that rule covers this too."""
    excused: str | None = None
    """The reason of the exception that accepts this finding."""
    field: str | None = None
    """The schema field path it is about (`total`, `hits[].region`), when it is about one."""
    allowed_by: str | None = None
    """The major version change that allows this breaking finding (see the module docstring)."""

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise KeyError(f"unknown review rule {self.rule}")

    @property
    def severity(self) -> str:
        """The rule's severity (rules.yaml): breaking, non-breaking or info."""
        return RULES[self.rule].severity

    @property
    def surface(self) -> str:
        """The surface the rule guards (rules.yaml): http (the wire), mcp, python (the generated API) or text."""
        return RULES[self.rule].surface

    @property
    def blocking(self) -> bool:
        """Whether it fails the review: breaking, with neither an exception nor a version bump for it."""
        return self.severity == "breaking" and self.excused is None and self.allowed_by is None

    def sort_key(self) -> tuple[Any, ...]:
        """The report's order: service, kind, subject, severity, then the rule and what changed."""
        return (
            self.service,
            KIND_ORDER[self.kind],
            self.subject,
            SEVERITY_ORDER[self.severity],
            self.rule,
            self.detail,
        )


@dataclass(slots=True)
class ServiceVerdict:
    """One service's outcome: its versions on both sides, the bumps that allow breaking changes,
    and how many findings stay unexcused."""

    name: str
    base_version: str | None
    head_version: str | None
    path_bump: str | None
    """e.g. "base path /v1/demo → /v2/demo": allows HTTP findings."""
    version_bump: str | None
    """e.g. "version 1.2.0 → 2.0.0": allows Python API findings."""
    needs: str = ""
    """What would allow breaking changes, for the report."""
    breaking: int = 0
    excused: int = 0
    allowed: int = 0
    unexcused: int = 0

    @property
    def ok(self) -> bool:
        """Whether no finding of the service stays unexcused."""
        return self.unexcused == 0

    @property
    def bumped(self) -> bool:
        """Whether the service's version or base path got a major bump (breaking changes allowed)."""
        return self.path_bump is not None or self.version_bump is not None


@dataclass(slots=True)
class Review:
    """The whole review of BASE against HEAD: every finding, each service's verdict, and the problems
    of the exceptions file and of the head's specs."""

    base: str
    head: str
    findings: list[Finding]
    services: dict[str, ServiceVerdict]
    exception_problems: list[str] = field(default_factory=list)
    unused_exceptions: list[Exception_] = field(default_factory=list)
    """New exceptions (not in BASE's file) that matched nothing: a typo or a stale entry; the review fails."""
    carried_exceptions: list[Exception_] = field(default_factory=list)
    """Exceptions already in BASE's file: they were for earlier changes, so they excuse nothing here and the
    report does not list them (they do not apply to this diff; only the JSON carries them)."""
    base_problems: list[Problem] = field(default_factory=list)
    head_problems: list[Problem] = field(default_factory=list)
    """HEAD's load problems, codegen lint problems and renamed_from mistakes: each fails the review."""
    head_note: str | None = None
    """Said under the verdict: what HEAD is when it is not a ref given by the caller (the working tree)."""

    @property
    def ok(self) -> bool:
        """Whether the review passes: every service ok, the exceptions valid and all used, the head's specs clean."""
        return (
            all(v.ok for v in self.services.values())
            and not self.exception_problems
            and not self.unused_exceptions
            and not self.head_problems
        )

    @property
    def exit_code(self) -> int:
        """The exit status of `kumitate diff`: 0 when the review passes, else 1."""
        return 0 if self.ok else 1

    def count(self, severity: str) -> int:
        """How many findings have `severity`."""
        return sum(1 for f in self.findings if f.severity == severity)

    def to_json(self) -> dict[str, Any]:
        """The review as JSON (`--format json`), for CI bots."""
        return {
            "base": self.base,
            "head": self.head,
            "ok": self.ok,
            "findings": [
                {**asdict(f), "severity": f.severity, "surface": f.surface, "blocking": f.blocking}
                for f in self.findings
            ],
            "services": {k: {**asdict(v), "ok": v.ok, "bumped": v.bumped} for k, v in sorted(self.services.items())},
            "exception_problems": self.exception_problems,
            "unused_exceptions": [asdict(e) for e in self.unused_exceptions],
            "carried_exceptions": [asdict(e) for e in self.carried_exceptions],
            "base_problems": [str(p) for p in self.base_problems],
            "head_problems": [str(p) for p in self.head_problems],
            "head_note": self.head_note,
        }


Change = tuple[str, str, str | None]
"""(rule, detail, caused_by)"""


def show(value: object) -> str:
    """A value as compact, sorted JSON for a finding's text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def at(direction: str, path: str) -> str:
    """Where in a schema a change is, for a finding's text (`input `a.b``, or the root)."""
    return f"{direction} `{path}`" if path else f"{direction} (root)"


_FIELD_AT = (
    re.compile(r"^(?:input|output) `([^`]*)`"),
    re.compile(r"^`\w+?(?:Input|Output|Resource)(?:\.|(?=\[\]))([^`]*)`"),
)


def field_of(detail: str) -> str | None:
    """The schema field path a finding's detail is about (`total`, `hits[].region`), if any."""
    for pattern in _FIELD_AT:
        match = pattern.match(detail)
        if match:
            return match.group(1)
    return None
