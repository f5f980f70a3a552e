"""Exceptions as the log shows them: by type and frames, never by message (a message may quote tool input).

The bottom floor of the runtime: the log (kumitate.observability.calllog) writes these, and what an exception means for
the caller (kumitate.faults) walks the same chain of causes, so neither imports the other for them.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator

__all__ = ["chain", "describe", "redacted_traceback"]


def chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc` and the exceptions it was raised from or while handling (`__cause__`, else `__context__`),
    at most 16, each once: what a failure stands for may sit under the exception that surfaced."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def describe(exc: BaseException) -> str:
    """`module.Type` of an exception, for a log line."""
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def redacted_traceback(exc: BaseException) -> str:
    """The traceback of `exc` and the exceptions it chains, with every message left out."""
    parts: list[str] = []
    for current in reversed(list(chain(exc))):
        if parts:
            parts.append("\nwhile handling or caused by the above:\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(traceback.extract_tb(current.__traceback__)))
        parts.append(f"{describe(current)}: <message withheld; it may quote tool input>\n")
    return "".join(parts)
