"""kumitate/intake.py: one parse, one validation, and what the handler receives per `handler_input`."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from kumitate.bindings import Annotations, ToolBinding
from kumitate.errors import ToolError
from kumitate.intake import MAX_DEPTH, Intake, JsonBody, decode_json
from kumitate.policies.spec import Policy

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "properties": {"n": {"type": "integer", "minimum": 1}, "tag": {"type": "string", "maxLength": 3}},
}


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    n: int = Field(ge=1)
    tag: str | None = Field(default=None, max_length=3)


def binding(handler_input: str = "model", schema_check: bool = False) -> ToolBinding:
    return ToolBinding(
        service="t",
        name="t",
        summary="",
        description="",
        input_schema=SCHEMA,
        output_schema={},
        input_model=Args,
        errors=[],
        http_method="POST",
        http_path="/t",
        content_types=["application/json"],
        annotations=Annotations(),
        policy=Policy(),
        deprecated=None,
        handler_input=handler_input,
        schema_check=schema_check,
    )


def test_data_tools_get_the_json_data_itself() -> None:
    data = {"n": 2, "tag": "ab"}
    assert Intake().prepare(binding("data"), data) is data
    body = JsonBody(b'{"n": 2}')
    assert Intake().prepare(binding("data"), body) == {"n": 2}


@pytest.mark.parametrize("arguments", [JsonBody(b'{"n": 2, "tag": "ab"}'), {"n": 2, "tag": "ab"}])
def test_model_tools_get_the_model_from_one_strict_validation(arguments: Any) -> None:
    model = Intake().prepare(binding(), arguments)
    assert isinstance(model, Args) and (model.n, model.tag) == (2, "ab")


def test_what_strict_pydantic_refuses_but_the_schema_accepts_still_passes() -> None:
    """JSON Schema counts 5.0 as an integer; strict pydantic does not: the schema decides."""
    model = Intake().prepare(binding(), JsonBody(b'{"n": 5.0}'))
    assert isinstance(model, Args) and model.n == 5


@pytest.mark.parametrize(
    "raw", [b'{"n": "5"}', b'{"n": 0}', b'{"n": 1, "tag": "abcd"}', b'{"n": 1, "x": 1}', b"{}", b'{"n": true}']
)
@pytest.mark.parametrize("mode", ["model", "data"])
def test_refusals_carry_the_schemas_message(raw: bytes, mode: str) -> None:
    with pytest.raises(ToolError) as caught:
        Intake().prepare(binding(mode), JsonBody(raw))
    assert caught.value.code == "BAD_REQUEST"
    assert caught.value.message.startswith("input does not match the schema: ")


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b"[" * (MAX_DEPTH + 2) + b"]" * (MAX_DEPTH + 2), "deeper than"),
        (b'{"n": "\xff"}', "UTF-8"),
        (b'{"n": "\xed\xa0\x80"}', "UTF-8"),
        (b'{"n": ', "malformed"),
    ],
)
def test_bodies_that_are_not_json_are_a_400(raw: bytes, words: str) -> None:
    with pytest.raises(ToolError) as caught:
        decode_json(raw)
    assert caught.value.code == "BAD_REQUEST" and words in caught.value.message
    with pytest.raises(ToolError):
        Intake().prepare(binding(), JsonBody(raw))


def test_json_at_the_depth_limit_parses() -> None:
    assert decode_json(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is not None


def test_formats_are_asserted_only_where_the_policy_says() -> None:
    """`format` is an annotation in JSON Schema 2020-12 (kept so for the bundled services); with
    `policy.assert_formats` (what an imported API's facade sets) a string that breaks it is BAD_REQUEST."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}}}
    intake = Intake()
    intake.check(schema, {"id": "not-a-uuid"})  # annotation only: accepted
    with pytest.raises(ToolError) as refused:
        intake.check(schema, {"id": "not-a-uuid"}, formats=True)
    assert refused.value.code == "BAD_REQUEST" and "/id" in str(refused.value)
    intake.check(schema, {"id": "3be6453c-03eb-4357-ae5a-984a0e574a54"}, formats=True)
