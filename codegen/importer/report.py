"""What an import carried over, what it changed and what it could not carry: IMPORT-REPORT.md and stdout.

The importer never drops a part of the document silently: every part it leaves out or changes on the way
into a kumitate service is noted here, per operation (what one tool lost or gained) or for the whole
document (security schemes, callbacks, shared types it had to change).
"""

from __future__ import annotations

from dataclasses import dataclass, field

REPORT_FILE = "IMPORT-REPORT.md"
"""The report's name inside specs/<service>/."""


@dataclass
class OperationReport:
    """One operation of the document and the tool it became."""

    operation: str
    """`GET /pets/{petId}` as the document writes it."""
    tool: str
    dropped: list[str] = field(default_factory=list)
    """Parts of the operation not carried into the tool (a cookie parameter, an error body schema)."""
    adapted: list[str] = field(default_factory=list)
    """Changes to the wire contract the lint or the binding needed (bounds added, a parameter renamed)."""
    notes: list[str] = field(default_factory=list)
    """Carried, but worth knowing (a transport header left to the runtime, an example kept)."""


@dataclass
class Report:
    """The whole import: document-level findings and one entry per operation."""

    source: str
    service: str
    title: str = ""
    openapi: str = ""
    document: list[str] = field(default_factory=list)
    """Findings about the document as a whole (security, callbacks, webhooks, shared types)."""
    operations: list[OperationReport] = field(default_factory=list)
    new_codes: list[str] = field(default_factory=list)
    """Codes appended to specs/errors.yaml, one line each (`GONE (410)`)."""
    skipped: list[str] = field(default_factory=list)
    """Operations that became no tool, with why."""

    def operation(self, operation: str, tool: str) -> OperationReport:
        """A new entry for `operation`, kept in the report."""
        entry = OperationReport(operation, tool)
        self.operations.append(entry)
        return entry

    def counts(self) -> tuple[int, int, int]:
        """(tools, parts dropped, wire adaptations), over the whole import."""
        dropped = sum(len(op.dropped) for op in self.operations) + len(self.skipped)
        adapted = sum(len(op.adapted) for op in self.operations)
        return len(self.operations), dropped, adapted

    def summary(self) -> list[str]:
        """A few lines for stdout: what was written and where the details are."""
        tools, dropped, adapted = self.counts()
        lines = [
            f"imported {tools} operation(s) of {self.title or self.source} (OpenAPI {self.openapi})"
            f" as service {self.service!r}: {dropped} part(s) not carried, {adapted} wire adaptation(s)"
        ]
        if self.skipped:
            lines.append(f"  {len(self.skipped)} operation(s) skipped: " + "; ".join(self.skipped[:3]))
        if self.new_codes:
            lines.append("  new error codes in specs/errors.yaml: " + ", ".join(self.new_codes))
        lines.extend(f"  {line}" for line in self.document[:5])
        if len(self.document) > 5:
            lines.append(f"  ... {len(self.document) - 5} more document-level notes")
        lines.append(f"details: specs/{self.service}/{REPORT_FILE}")
        return lines

    def markdown(self) -> str:
        """The full report, one section per operation."""
        tools, dropped, adapted = self.counts()
        out = [
            f"# Import report: {self.service}",
            "",
            f"Imported from `{self.source}` ({self.title or 'untitled'}, OpenAPI {self.openapi}) by"
            " `kumitate import openapi`. Everything the import left out or changed is listed here;"
            " the specs are yours to edit from now on.",
            "",
            f"- tools: {tools}",
            f"- parts not carried: {dropped}",
            f"- wire adaptations (the tool's contract differs from the document's): {adapted}",
            "",
        ]
        if self.document or self.new_codes or self.skipped:
            out += ["## The document", ""]
            out += [f"- {line}" for line in self.document]
            out += [f"- new error code in specs/errors.yaml: {code}" for code in self.new_codes]
            out += [f"- skipped: {line}" for line in self.skipped]
            out.append("")
        for op in self.operations:
            out += [f"## `{op.tool}`: {op.operation}", ""]
            for label, items in (("not carried", op.dropped), ("adapted", op.adapted), ("note", op.notes)):
                out += [f"- {label}: {item}" for item in items]
            if not (op.dropped or op.adapted or op.notes):
                out.append("- carried as documented")
            out.append("")
        return "\n".join(out).rstrip("\n") + "\n"
