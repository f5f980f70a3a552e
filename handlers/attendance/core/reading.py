"""What the grammar (and the modules that refine it) made of an utterance."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Reading:
    """A rule type and its parameters, with how sure the parser is and which matcher produced it."""

    type: str
    params: dict[str, Any]
    confidence: float
    pattern: str
    questions: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    optional: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
