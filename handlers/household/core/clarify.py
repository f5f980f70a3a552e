"""Asking which spending category was meant, instead of failing (CallContext.ask).

An unknown or non-spending category fails with VALIDATION_ERROR and the nearest spending
categories as `suggestions`. Where the caller's client can ask the user directly (MCP
elicitation), the suggestions are offered as a choice and the call goes on with the one picked;
a declined question, or a client that cannot ask, gets the error as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from kumitate.context import CallContext
from kumitate.errors import ToolError

T = TypeVar("T")


def choice_schema(name: str, suggestions: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "category": {"type": "string", "title": f"「{name}」の代わりのカテゴリ", "enum": list(suggestions)}
        },
        "required": ["category"],
    }


def retrying_category(ctx: CallContext, category: str | None, run: Callable[[str | None], T]) -> T:
    """`run(category)`; if it refuses the category with suggestions and the user picks one, `run` with that."""
    try:
        return run(category)
    except ToolError as exc:
        suggestions = exc.details.get("suggestions") if exc.code == "VALIDATION_ERROR" else None
        name = exc.details.get("category")
        if not suggestions or not isinstance(name, str) or ctx.asker is None:
            raise
        key = "household.category." + hashlib.sha256(name.encode()).hexdigest()[:16]
        answer = ctx.ask(key, f"{exc.message} どのカテゴリにしますか？", choice_schema(name, suggestions))
        chosen = answer.get("category") if answer else None
        if chosen not in suggestions:
            raise
        return run(chosen)
