"""Asking the organiser which invitee a name meant, while the parse runs (CallContext.ask).

A name that fits several invitees (「田中さん」 with 田中 一郎 and 田中 花子) is never guessed: the
parse returns a question. Where the caller's client can ask the organiser directly (MCP
elicitation), the question is put as a choice among the candidates instead, and the parse goes
on with the answer; a declined question, or a client that cannot ask, leaves today's question
in the result.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from handlers.attendance.core.names import Directory, Mention
from kumitate.context import CallContext

Chooser = Callable[[str, dict[str, str]], "str | None"]
"""(the name as written, {invitee_key: display name}) -> the chosen key, or None."""


def choice_schema(name: str, candidates: dict[str, str]) -> dict[str, object]:
    """A one-field form: pick one invitee (`oneOf` with titles; `enum` for clients of the 2025-06-18 form)."""
    return {
        "type": "object",
        "properties": {
            "invitee": {
                "type": "string",
                "title": f"「{name}」はどなたですか？",
                "enum": list(candidates),
                "oneOf": [{"const": key, "title": title} for key, title in candidates.items()],
            }
        },
        "required": ["invitee"],
    }


def chooser(ctx: CallContext) -> Chooser | None:
    """The organiser, asked through the caller's client; None where the transport cannot ask."""
    if ctx.asker is None:
        return None

    def choose(name: str, candidates: dict[str, str]) -> str | None:
        key = "attendance.invitee." + hashlib.sha256(name.encode()).hexdigest()[:16]
        message = f"「{name}」に当てはまる招待者が複数います。どなたですか？"
        answer = ctx.ask(key, message, choice_schema(name, candidates))
        chosen = answer.get("invitee") if answer else None
        return chosen if isinstance(chosen, str) and chosen in candidates else None

    return choose


def settle(mentions: list[Mention], directory: Directory, choose: Chooser) -> None:
    """Narrow each ambiguous mention to the invitee the organiser chose (once per name)."""
    chosen: dict[str, str | None] = {}
    for mention in mentions:
        if len(mention.keys) < 2:
            continue
        if mention.name not in chosen:
            chosen[mention.name] = choose(mention.name, {k: directory.names[k] for k in mention.keys})
        pick = chosen[mention.name]
        if pick is not None:
            mention.keys = [pick]
