"""A value sent as text (a path segment, a query key, a header) is read as the JSON its property's schema
means; under an `anyOf` / `oneOf`, as the first alternative it is valid as (Qdrant's point id, `anyOf:
[integer, uuid string]`: the text `42` is the point 42, and the import proof's stub refused it as text)."""

from __future__ import annotations

import jsonschema
import pytest

from kumitate.textvalues import coerce, from_text, local

ROOT = {
    "type": "object",
    "properties": {
        "id": {"$ref": "#/$defs/ExtendedPointId", "description": "Id of the point"},
        "consistency": {"$ref": "#/$defs/ReadConsistency"},
        "ids": {"type": "array", "items": {"$ref": "#/$defs/ExtendedPointId"}},
    },
    "$defs": {
        "ExtendedPointId": {
            "anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "format": "uuid"}],
        },
        "ReadConsistency": {
            "anyOf": [{"type": "integer", "minimum": 1}, {"$ref": "#/$defs/ReadConsistencyType"}],
        },
        "ReadConsistencyType": {"type": "string", "enum": ["majority", "quorum", "all"]},
    },
}
UUID = "550e8400-e29b-41d4-a716-446655440000"


def _read(prop: str, *texts: str) -> object:
    return from_text(list(texts), local(ROOT["properties"][prop], ROOT), ROOT)


@pytest.mark.parametrize(("text", "expected"), [("65346484", 65346484), ("0", 0), (UUID, UUID)])
def test_an_any_of_reads_the_first_alternative_the_text_is_valid_as(text: str, expected: object) -> None:
    value = _read("id", text)
    assert value == expected and type(value) is type(expected)
    jsonschema.validate({"id": value}, ROOT)


def test_an_alternative_named_by_ref_is_read_through_it() -> None:
    assert _read("consistency", "2") == 2
    assert _read("consistency", "majority") == "majority"


def test_each_item_of_a_list_is_read_as_its_alternative() -> None:
    assert _read("ids", "7", UUID) == [7, UUID]


def test_a_format_decides_between_alternatives_it_tells_apart() -> None:
    schema = {"oneOf": [{"type": "string", "format": "uuid"}, {"type": "integer"}]}
    assert coerce("42", schema) == 42
    assert coerce(UUID, schema) == UUID


def test_a_nullable_value_is_read_as_its_type() -> None:
    assert coerce("7", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) == 7


def test_null_is_read_as_null_where_the_schema_takes_null_and_not_the_text() -> None:
    """kumitate writes null in a form as `null` (kumitate.formbody), and schemathesis does so for Lob's
    nullable `cancel_window_campaign_minutes`, `use_type` enum, `send_date` date-time: read back as null,
    unless the text `null` is a string the schema takes too."""
    assert coerce("null", {"type": ["integer", "null"]}) is None
    assert coerce("null", {"type": ["string", "null"], "enum": ["marketing", None]}) is None
    assert coerce("null", {"anyOf": [{"type": "integer"}, {"type": "null"}]}) is None
    assert coerce("null", {"type": ["string", "null"], "format": "date-time"}) is None
    assert coerce("null", {"type": ["string", "null"], "pattern": "^card_"}) is None
    assert coerce("null", {"type": ["string", "null"]}) == "null"
    cards = {"type": ["array", "null"], "items": {"type": "string", "pattern": "^card_"}}
    assert from_text(["null"], cards, cards) is None
    assert from_text(["null"], {"type": "array", "items": {"type": "string"}}, {}) == ["null"]
    words = {"type": ["array", "null"], "items": {"type": "string"}}
    assert from_text(["null"], words, words) == ["null"]
    assert coerce("null", {"type": "integer"}) == "null"


def test_a_ref_or_an_all_of_is_read_as_the_type_its_part_says() -> None:
    """Lob's letter `color`: `allOf: [{$ref: Color}, {default: false}]`, Color a boolean; the form's `true`
    is the boolean (it stayed the text 'true', and the facade refused its own OpenAPI's form)."""
    root = {
        "$defs": {
            "Color": {"type": "boolean"},
            "Count": {"allOf": [{"$ref": "#/$defs/Size"}]},
            "Size": {"type": "integer"},
        }
    }
    assert coerce("true", {"allOf": [{"$ref": "#/$defs/Color"}, {"default": False}]}, root) is True
    assert coerce("3", {"$ref": "#/$defs/Count"}, root) == 3
    assert coerce("x", {"allOf": [{"description": "no type"}]}, root) == "x"


def test_text_no_alternative_accepts_stays_text_and_fails_validation() -> None:
    value = _read("id", "-3")
    assert value == "-3"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"id": value}, ROOT, format_checker=jsonschema.FormatChecker())
