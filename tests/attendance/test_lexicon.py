"""The grammar's lexicon is data (handlers/attendance/core/lexicon.yaml): every entry compiles, every entry is
used by the grammar, and the grammar's code holds no word list or pattern of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import handlers.attendance.core.grammar as grammar
from handlers.attendance.core.lexicon import joined, lexicon

GRAMMAR_SOURCE = Path(grammar.__file__).read_text(encoding="utf-8")
ENTRY_LISTS = ("fractions", "explicit_k_of_n")
WORD_LISTS = ("all_words", "group_qualifiers", "group_prefix_words", "not_groups", "not_a_name", "not_in_name")


def test_every_pattern_is_a_grammar_constant() -> None:
    for name in lexicon()["patterns"]:
        compiled = getattr(grammar, "_" + name.upper())
        assert isinstance(compiled, re.Pattern), name
        assert f'lexicon_pattern("{name}")' in GRAMMAR_SOURCE


def test_every_list_is_used_and_well_formed() -> None:
    data = lexicon()
    assert set(data) == {"patterns", *ENTRY_LISTS, *WORD_LISTS}
    for name in WORD_LISTS:
        assert f'words("{name}")' in GRAMMAR_SOURCE, name
    for name in ENTRY_LISTS:
        assert f'entries("{name}")' in GRAMMAR_SOURCE, name
    for name in WORD_LISTS:
        assert all(isinstance(w, str) for w in data[name]) and len(set(data[name])) == len(data[name]), name
    assert {f["kind"] for f in data["fractions"]} == {"minus", "majority", "half", "fraction", "tenths", "percent"}
    for entry in data["explicit_k_of_n"]:
        assert re.compile(joined(entry["pattern"])).groups == 2 and isinstance(entry["k_first"], bool)


def test_the_grammar_code_writes_no_pattern_literal() -> None:
    """Only the script classes (katakana, kanji, latin) stay in code."""
    calls = [
        node
        for node in ast.walk(ast.parse(GRAMMAR_SOURCE))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) in {"rx", "compile"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]
    assert [ast.literal_eval(c.args[0]) for c in calls] == [
        r"[\u30a0-\u30ff]",
        r"[a-z0-9]",
        r"[\u4e00-\u9fff\u3005a-z]",
    ]
