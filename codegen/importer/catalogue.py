"""The project's error catalogue (specs/errors.yaml) seen from an import: a code per documented status.

A status that has a code keeps it (404 -> NOT_FOUND; where several codes share a status, the one a client
of that status expects: 409 -> CONFLICT, not IN_PROGRESS). A status with none gets a new code named after
its reason phrase (410 -> GONE), appended to the catalogue with the document's words as its description.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

from codegen.importer.names import snake
from codegen.refs import dump_yaml, parse_yaml
from kumitate.errors import STATUS_CODES

PREFERRED: dict[int, str] = {
    **STATUS_CODES,
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    502: "UPSTREAM_ERROR",
    504: "UPSTREAM_TIMEOUT",
}
"""The code a status maps to when the catalogue has it."""
RETRYABLE = frozenset({408, 425, 429, 502, 503, 504})
DESCRIPTION_MAX = 300


@dataclass
class Catalogue:
    """The codes of specs/errors.yaml by status, and the codes this import adds."""

    path: Path
    codes: dict[str, int] = field(default_factory=dict)
    added: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Catalogue:
        """The catalogue at `path` (a project's specs/errors.yaml)."""
        doc = parse_yaml(path.read_text(encoding="utf-8")) or {}
        codes = doc.get("codes") if isinstance(doc, dict) else None
        found = {str(code): int(entry.get("status", 0)) for code, entry in (codes or {}).items()}
        return cls(path, found)

    def code_for(self, status: int, described: str) -> str:
        """The catalogue's code for `status`, adding one (described by the document's words) when none fits."""
        preferred = PREFERRED.get(status)
        if preferred is not None and self.codes.get(preferred) == status:
            return preferred
        for code, code_status in self.codes.items():
            if code_status == status:
                return code
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = ""
        base = snake(phrase).upper() or f"HTTP_{status}"
        code = base if base not in self.codes else f"{base}_{status}"
        text = " ".join(described.split()) or f"The upstream API answered {status} {phrase}".strip() + "."
        if len(text) > DESCRIPTION_MAX:
            text = text[: DESCRIPTION_MAX - 3].rsplit(" ", 1)[0] + "..."
        self.codes[code] = status
        self.added[code] = {
            "status": status,
            "retryable": status in RETRYABLE,
            "title": phrase or f"HTTP {status}",
            "description": text,
        }
        return code

    def append(self) -> None:
        """Append the added codes to the catalogue file, keeping what it holds (comments included)."""
        if not self.added:
            return
        text = self.path.read_text(encoding="utf-8")
        block = dump_yaml(self.added)
        indented = "".join(f"  {line}" if line.strip() else line for line in block.splitlines(keepends=True))
        header = "  # added by `kumitate import openapi`: statuses the imported document names\n"
        candidate = text.rstrip("\n") + "\n" + header + indented
        doc = parse_yaml(candidate)
        if isinstance(doc, dict) and all(code in (doc.get("codes") or {}) for code in self.added):
            self.path.write_text(candidate, encoding="utf-8")
            return
        whole = parse_yaml(text) or {}
        if not isinstance(whole, dict):
            raise ValueError(f"{self.path}: the error catalogue is not a mapping")
        whole.setdefault("codes", {}).update(self.added)
        self.path.write_text(dump_yaml(whole), encoding="utf-8")
