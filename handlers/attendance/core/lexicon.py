"""The grammar's lexicon, loaded from lexicon.yaml beside this module (shipped with the package).

Words and patterns are data: adding a required word (必須, マスト, …) or an exclusion word is an
edit of lexicon.yaml, not of the grammar's code. grammar/vocabulary.py compiles the entries with
text.rx (written in natural script, matched against folded text) on the first parse; the file is
read then too, so importing the service reads and compiles nothing.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any


@cache
def lexicon() -> dict[str, Any]:
    import yaml  # read on the first parse, not at import

    source = (
        resources.files(__package__ or "handlers.attendance.core").joinpath("lexicon.yaml").read_text(encoding="utf-8")
    )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's: 20x faster than the pure-Python one
    data: dict[str, Any] = yaml.load(source, Loader=loader)  # a safe loader (CSafeLoader or SafeLoader)
    return data


def joined(value: str | list[str]) -> str:
    """A pattern given as a list is its pieces concatenated."""
    return value if isinstance(value, str) else "".join(value)


def words(name: str) -> list[str]:
    found: list[str] = lexicon()[name]
    return found


def entries(name: str) -> list[dict[str, Any]]:
    """A list of records (fractions, explicit_k_of_n), each with its `pattern`."""
    found: list[dict[str, Any]] = lexicon()[name]
    return found
