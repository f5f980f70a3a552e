"""The advertised outputSchema leaves out descriptions a model already has (codegen/advertised.py)."""

from __future__ import annotations

import json
from typing import Any

from codegen import advertised, docs
from codegen.specs import SpecTree

MODE = {"type": "string", "enum": ["ALL", "ANY"], "description": "ALL: every invitee must attend. ANY: one is enough."}


def test_text_the_input_carries_and_names_restated_are_left_out() -> None:
    given = {"type": "object", "properties": {"mode": MODE}}
    output: dict[str, Any] = {
        "type": "object",
        "description": "The saved rule.",
        "properties": {
            "mode": MODE,
            "thread_id": {"type": "string", "description": "Thread id."},
            "columns": {"type": "array", "description": "Column names.", "items": {"description": "A column name."}},
            "saved_at": {"type": "string", "description": "When the rule was saved (UTC)."},
        },
    }
    out = advertised.output_schema(output, given)
    props = out["properties"]
    assert "description" not in props["mode"] and props["mode"]["enum"] == ["ALL", "ANY"]
    assert "description" not in props["thread_id"]
    assert "description" not in props["columns"] and "description" not in props["columns"]["items"]
    assert props["saved_at"]["description"] == "When the rule was saved (UTC)."
    assert out["description"] == "The saved rule."
    assert output["properties"]["mode"] == MODE  # the spec's schema is untouched


def test_a_description_that_adds_a_word_is_kept() -> None:
    assert advertised.restates("Thread id.", ["thread_id"])
    assert advertised.restates("Transaction id.", ["TransactionRef", "id"])
    assert not advertised.restates("Column names, in order.", ["columns"])
    assert not advertised.restates("Requested year.", ["year"])


def test_spec_keeps_every_description_and_mcp_sends_the_echo_once(spec_tree: SpecTree) -> None:
    tool = next(t for t in spec_tree.all_tools() if t.name == "save_attendance_rule")
    entry = json.dumps(docs.tool_list_entry(tool), ensure_ascii=False)
    sentence = "How a valid slot becomes final."
    assert entry.count(sentence) == 1  # in the inputSchema, not again in the outputSchema
    assert sentence in json.dumps(tool.output_schema, ensure_ascii=False)
