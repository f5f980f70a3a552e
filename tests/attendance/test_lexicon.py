"""The grammar's lexicon is data (handlers/attendance/core/lexicon.yaml): every entry compiles into one field
of the vocabulary, every field is used by the grammar, the grammar's code holds no word list or pattern of
its own, and importing the service compiles none of it (issue 32: it is built on the first parse)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

from handlers.attendance.core import grammar
from handlers.attendance.core.grammar.vocabulary import Vocabulary, vocabulary
from handlers.attendance.core.lexicon import joined, lexicon

GRAMMAR_DIR = Path(grammar.__file__).parent
SOURCES = {p.name: p.read_text(encoding="utf-8") for p in GRAMMAR_DIR.glob("*.py")}
USERS = "".join(s for name, s in SOURCES.items() if name != "vocabulary.py") + (
    GRAMMAR_DIR.parent / "contradiction.py"
).read_text(encoding="utf-8")
ENTRY_LISTS = ("fractions", "explicit_k_of_n")
WORD_LISTS = ("all_words", "group_qualifiers", "group_prefix_words", "not_groups", "not_a_name", "not_in_name")


def test_every_entry_is_a_vocabulary_field_and_every_field_is_used() -> None:
    data = lexicon()
    fields = {f.name for f in dataclasses.fields(Vocabulary)}
    assert set(data) == {"patterns", *ENTRY_LISTS, *WORD_LISTS}
    assert fields == {*data["patterns"], *ENTRY_LISTS, *WORD_LISTS}
    built = vocabulary()
    for name in data["patterns"]:
        assert isinstance(getattr(built, name), re.Pattern), name
    unused = [name for name in fields if f".{name}" not in USERS]
    assert not unused, f"lexicon entries no matcher reads: {unused}"


def test_every_list_is_well_formed() -> None:
    data = lexicon()
    for name in WORD_LISTS:
        assert all(isinstance(w, str) for w in data[name]) and len(set(data[name])) == len(data[name]), name
    assert {f["kind"] for f in data["fractions"]} == {"minus", "majority", "half", "fraction", "tenths", "percent"}
    assert [f["kind"] for f in data["fractions"] if f.get("absence")] == ["minus"]
    for entry in data["explicit_k_of_n"]:
        assert re.compile(joined(entry["pattern"])).groups == 2 and isinstance(entry["k_first"], bool)


def test_the_grammar_code_writes_no_pattern_literal() -> None:
    """Only the script classes (katakana, kanji, latin) stay in code."""
    literals = sorted(
        ast.literal_eval(node.args[0])
        for source in SOURCES.values()
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", None)) in {"rx", "compile"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
    )
    assert literals == sorted([r"[\u30a0-\u30ff]", r"[a-z0-9]", r"[\u4e00-\u9fff\u3005a-z]"])


def test_importing_the_grammar_compiles_no_lexicon_pattern() -> None:
    """The lexicon is read and compiled on the first parse (vocabulary()), not when a process imports the
    service: no grammar module holds a compiled pattern but the script classes, and yaml is imported late."""
    at_import = [
        value.pattern
        for info in pkgutil.iter_modules([str(GRAMMAR_DIR)])
        for value in vars(importlib.import_module(f"{grammar.__name__}.{info.name}")).values()
        if isinstance(value, re.Pattern)
    ]
    assert sorted(at_import) == sorted([r"[\u30a0-\u30ff]", r"[a-z0-9]", r"[\u4e00-\u9fff\u3005a-z]"])
    top = ast.parse((GRAMMAR_DIR.parent / "lexicon.py").read_text(encoding="utf-8")).body
    assert not any(isinstance(node, ast.Import) and node.names[0].name == "yaml" for node in top)
