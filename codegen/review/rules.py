"""The review rules (data: rules.yaml) and the reasoned exceptions (specs/review-exceptions.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from codegen.refs import parse_yaml

RULES_FILE = Path(__file__).with_name("rules.yaml")
EXCEPTIONS_FILE = "review-exceptions.yaml"
"""Read from HEAD's specs/ directory."""

SEVERITIES = ("breaking", "non-breaking", "info")
SURFACES = {
    "http": "HTTP",
    "mcp": "MCP",
    "http+mcp": "HTTP+MCP",
    "python": "Python API",
    "text": "LLM text",
}


@dataclass(frozen=True, slots=True)
class Rule:
    """One review rule of specs/review-rules.yaml: the surface it guards and how severe a finding is."""

    id: str
    surface: str
    severity: str
    description: str


def load_rules(path: Path = RULES_FILE) -> dict[str, Rule]:
    """The rules by id from `path`; a duplicate id is an error."""
    doc = parse_yaml(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: the rules file is a mapping with a `rules` list")
    rules: dict[str, Rule] = {}
    for entry in doc["rules"]:
        rule = Rule(entry["id"], entry["surface"], entry["severity"], entry["description"])
        if rule.id in rules:
            raise ValueError(f"{path}: rule {rule.id} is listed twice")
        if rule.severity not in SEVERITIES or rule.surface not in SURFACES:
            raise ValueError(f"{path}: rule {rule.id} has an unknown severity or surface")
        rules[rule.id] = rule
    return rules


RULES: dict[str, Rule] = load_rules()


@dataclass(frozen=True, slots=True)
class Exception_:
    """One accepted change: `rule` on `tool` (a tool, resource or service name), with a reason.

    `field` narrows it to one schema field path and what lies under it (`total` covers `total` only,
    `filters` covers `filters.region` too); `service` to one service.
    """

    rule: str
    tool: str
    reason: str
    service: str | None = None
    index: int = 0
    field: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None, str | None, str]:
        """What identifies the exception across BASE and HEAD (all but its position)."""
        return (self.rule, self.tool, self.service, self.field, self.reason)

    def covers_field(self, path: str | None) -> bool:
        """Whether the exception's field (if it names one) is the finding's field or encloses it."""
        if self.field is None:
            return True
        if path is None:
            return False
        return path == self.field or any(path.startswith(self.field + sep) for sep in (".", "[]", "<", "{"))

    def matches(
        self, rule: str, caused_by: str | None, service: str, subject: str, field_path: str | None = None
    ) -> bool:
        """Whether this exception excuses a finding of `rule` (or of the rule that caused it) on
        this service, subject and field."""
        if self.rule not in (rule, caused_by):
            return False
        if self.service is not None and self.service != service:
            return False
        return self.tool == subject and self.covers_field(field_path)


SHAPE = "{rule, tool, reason[, field][, service]}"


def load_exceptions(specs_dir: Path) -> tuple[list[Exception_], list[str]]:
    """The exceptions of a specs dir, and the problems with the file (each makes the review fail)."""
    path = specs_dir / EXCEPTIONS_FILE
    if not path.exists():
        return [], []
    try:
        doc: Any = parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        return [], [f"specs/{EXCEPTIONS_FILE} does not parse: {exc}"]
    if doc is None:
        return [], []
    if isinstance(doc, dict):
        doc = doc.get("exceptions", [])
    if not isinstance(doc, list):
        return [], [f"specs/{EXCEPTIONS_FILE} must be a list of {SHAPE}"]
    found: list[Exception_] = []
    problems: list[str] = []
    for i, entry in enumerate(doc):
        where = f"specs/{EXCEPTIONS_FILE}#/{i}"
        problem = _entry_problem(entry)
        if problem is not None:
            problems.append(f"{where}: {problem}")
            continue
        field = entry.get("field")
        found.append(
            Exception_(
                entry["rule"],
                entry["tool"],
                entry["reason"].strip(),
                entry.get("service"),
                i,
                field.strip() if field else None,
            )
        )
    return found, problems


def _entry_problem(entry: object) -> str | None:
    """What is wrong with one entry of the exceptions file (the first thing found), or None when it is
    an exception: a mapping of the known keys, a known rule, one named subject (no wildcard) and a reason."""
    if not isinstance(entry, dict):
        return f"an exception is a mapping {SHAPE}"
    rule, tool, reason = entry.get("rule"), entry.get("tool"), entry.get("reason")
    field, service = entry.get("field"), entry.get("service")
    unknown = sorted(set(entry) - {"rule", "tool", "reason", "field", "service"})
    if unknown:
        return f"unknown key(s) {', '.join(map(str, unknown))} (an exception is {SHAPE})"
    if not isinstance(rule, str) or rule not in RULES:
        return f"unknown rule {rule!r}"
    if not isinstance(tool, str) or not tool:
        return "`tool` is missing (a tool, resource or service name)"
    if "*" in tool:
        return (
            f"`tool: {tool}`: wildcards are not allowed; name the tool, resource or service"
            " (one exception, one reason, per subject)"
        )
    if field is not None and (not isinstance(field, str) or not field.strip()):
        return "`field` must be a field path such as `total` or `hits[].region`"
    if service is not None and not isinstance(service, str):
        return "`service` must be a service name"
    if not isinstance(reason, str) or not reason.strip():
        return f"the exception for {rule} on {tool} has no reason"
    return None
