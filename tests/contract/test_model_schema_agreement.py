"""Per tool: the generated input model and the spec's JSON Schema accept and reject the same inputs.

The pipeline (kumitate/intake.py) validates a `handler_input: model` tool with strict pydantic
alone when codegen judged that the model says everything the schema says (`schema_check` off),
and falls back to the schema when pydantic refuses. That is exact only if

* the strict model accepts nothing the schema rejects (else the schema would be bypassed), and
* the model takes every input the schema accepts (else a valid call would fail), and, for the
  fast path to be the usual one, the strict model takes them too.

Checked on every spec example and on generated inputs: valid ones from the schema
(schemathesis' JSON Schema generator, on hypothesis) and invalid ones made by mutating valid ones (a required field dropped,
an unknown field added, a value of the wrong type, a null for a property, a string out of its pattern or length) at a
random depth, plus arbitrary JSON. The generators are checked to have produced both kinds.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from schemathesis.core.jsonschema import CANONICALIZE_DRAFT_BY_VALIDATOR
from schemathesis.generation.jsonschema.builder import build

from codegen import specs
from generated.registry import SERVICES
from kumitate.bindings import ToolBinding

TOOLS = {t.name: t for svc in SERVICES.values() for t in svc.tools}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
PER_EXAMPLE = 2
WRONG_TYPE = {"string": 7, "integer": "7", "number": "7.5", "boolean": "true", "array": {}, "object": [], "null": 0}


def _strict(binding: ToolBinding, value: Any) -> bool:
    try:
        binding.input_model.model_validate_json(json.dumps(value), strict=True)
    except ValidationError:
        return False
    return True


def _lax(binding: ToolBinding, value: Any) -> bool:
    try:
        binding.input_model.model_validate(value)
    except ValidationError:
        return False
    return True


def _agree(binding: ToolBinding, value: Any, seen: Counter[str]) -> None:
    schema_ok = jsonschema_rs.Draft202012Validator(binding.input_schema).is_valid(value)
    strict_ok = _strict(binding, value)
    seen["valid" if schema_ok else "invalid"] += 1
    # the fast path (no JSON Schema check) may be taken only where the model refuses all the schema refuses
    assert binding.schema_check or not strict_ok or schema_ok, (
        f"{binding.name}: the model alone accepts what the schema rejects: {value!r:.300}"
    )
    if schema_ok:
        assert _lax(binding, value), f"{binding.name}: the model rejects a schema-valid input: {value!r:.300}"
        if not binding.schema_check:
            assert strict_ok, f"{binding.name}: the fast path refuses a schema-valid input: {value!r:.300}"


def _mutate(draw: st.DrawFn, value: Any, schema: dict[str, Any]) -> Any:
    """One change somewhere in `value` that its (sub)schema should refuse, at a random depth."""
    if isinstance(value, dict):
        props = schema.get("properties", {})
        children = [k for k in value if isinstance(value[k], dict | list) and k in props]
        if children and draw(st.booleans()):
            key = draw(st.sampled_from(children))
            return {**value, key: _mutate(draw, value[key], props[key])}
        required = [k for k in schema.get("required", []) if k in value]
        choices = (
            ["unknown"] + (["drop"] if required else []) + (["retype"] if value else []) + (["null"] if props else [])
        )
        choice = draw(st.sampled_from(choices))
        if choice == "null":  # optional properties are `X | None` in the models: null must still be refused
            return {**value, draw(st.sampled_from(sorted(props))): None}
        if choice == "drop":
            key = draw(st.sampled_from(required))
            return {k: v for k, v in value.items() if k != key}
        if choice == "retype":
            key = draw(st.sampled_from(sorted(value)))
            sub = props.get(key, {})
            kind = sub.get("type", "string") if isinstance(sub.get("type", "string"), str) else "string"
            if "pattern" in sub or "maxLength" in sub:
                return {**value, key: draw(st.sampled_from(["", " ", "x" * 300, "١٢٣٤-٠١", "ab\n"]))}
            return {**value, key: WRONG_TYPE.get(kind, 7)}
        return {**value, "zz_unknown_field": 1}
    if isinstance(value, list) and value:
        index = draw(st.integers(0, len(value) - 1))
        items = schema.get("items", {}) if isinstance(schema.get("items"), dict) else {}
        return [*value[:index], _mutate(draw, value[index], items), *value[index + 1 :]]
    return draw(JSON)


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_examples(name: str, spec_tree: specs.SpecTree) -> None:
    binding = TOOLS[name]
    tool = next(t for svc in spec_tree.services for t in svc.tools if t.name == name)
    seen: Counter[str] = Counter()
    for example in tool.examples:
        _agree(binding, example.input, seen)
    assert seen["valid"] or seen["invalid"], f"{name} has no examples"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_generated_inputs(name: str) -> None:
    binding = TOOLS[name]
    schema = binding.input_schema
    seen: Counter[str] = Counter()

    valid_inputs = build(schema, draft=CANONICALIZE_DRAFT_BY_VALIDATOR[jsonschema_rs.Draft202012Validator], formats={})

    @st.composite
    def mutated(draw: st.DrawFn, value: Any) -> Any:
        return _mutate(draw, value, schema)

    # 40 valid inputs and as many mutants and arbitrary JSON values per tool, drawn PER_EXAMPLE at a time:
    # the same inputs for half of Hypothesis' per-example work (the engine's bookkeeping, not the drawing)
    @settings(max_examples=40 // PER_EXAMPLE, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        for _ in range(PER_EXAMPLE):
            valid = data.draw(valid_inputs, label="valid")
            _agree(binding, valid, seen)
            _agree(binding, data.draw(mutated(valid), label="mutated"), seen)
            _agree(binding, data.draw(JSON, label="any JSON"), seen)

    check()
    assert seen["valid"] >= 40, f"{name}: the generator produced only {seen['valid']} valid inputs"
    assert seen["invalid"] >= 20, f"{name}: the generator produced only {seen['invalid']} invalid inputs"
