"""The grammar's lexicon, loaded from lexicon.yaml beside this module (shipped with the package).

Words and patterns are data: adding a required word (必須, マスト, …) or an exclusion word is an
edit of lexicon.yaml, not of the grammar's code. `pattern(name)` compiles one entry with text.rx
(written in natural script, matched against folded text).
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from handlers.attendance.core.text import rx


@cache
def lexicon() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        resources.files(__package__ or "handlers.attendance.core").joinpath("lexicon.yaml").read_text(encoding="utf-8")
    )
    return data


def joined(value: str | list[str]) -> str:
    """A pattern given as a list is its pieces concatenated."""
    return value if isinstance(value, str) else "".join(value)


def pattern(name: str) -> re.Pattern[str]:
    return rx(joined(lexicon()["patterns"][name]))


def words(name: str) -> list[str]:
    found: list[str] = lexicon()[name]
    return found


def entries(name: str) -> list[dict[str, Any]]:
    """A list of records (fractions, explicit_k_of_n), each with its `pattern`."""
    found: list[dict[str, Any]] = lexicon()[name]
    return found
