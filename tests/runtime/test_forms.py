"""Form fields are read back as the JSON type their property declares, and the OpenAPI form
schema documents exactly what is accepted (schemathesis holds the server to it)."""

from __future__ import annotations

import jsonschema
import pytest

from kumitate.errors import ToolError
from kumitate.textvalues import from_text
from kumitate.transports.http.forms import Flattened, coerce, form_schema, local, value_fields

SCHEMA = {
    "type": "object",
    "properties": {
        "flag": {"type": "boolean", "default": True, "description": "A switch."},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "text": {"type": "string"},
    },
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("on", True), ("off", False), ("1", True), ("0", False), ("true", True), ("False", False)],
)
def test_boolean_words(text: str, expected: bool) -> None:
    assert coerce(text, SCHEMA["properties"]["flag"]) is expected


@pytest.mark.parametrize("text", ["yes", "TRUE", "2", "", " on"])
def test_other_words_stay_text_and_fail_validation(text: str) -> None:
    value = coerce(text, SCHEMA["properties"]["flag"])
    assert value == text
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"flag": value}, SCHEMA)


def test_numbers_follow_json_semantics() -> None:
    assert coerce("5", {"type": "integer"}) == 5
    assert coerce("5.0", {"type": "integer"}) == 5 and isinstance(coerce("5.0", {"type": "integer"}), int)
    assert coerce("1.5", {"type": "integer"}) == 1.5  # not an integer: validation says so
    assert coerce("1.5", {"type": "number"}) == 1.5
    assert coerce("abc", {"type": "integer"}) == "abc"
    assert coerce('["a", "b"]', SCHEMA["properties"]["tags"]) == ["a", "b"]
    assert coerce("plain", SCHEMA["properties"]["text"]) == "plain"


def test_form_schema_accepts_exactly_the_boolean_words() -> None:
    documented = form_schema(SCHEMA)
    flag = documented["properties"]["flag"]
    assert flag["default"] is True and flag["description"] == "A switch." and "type" not in flag
    for word in ["on", "off", "1", "0", "true", "False", 0, 1, True]:
        jsonschema.validate({"flag": word}, documented)
    for word in ["yes", "TRUE", 2, ""]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({"flag": word}, documented)
    assert documented["properties"]["count"] == SCHEMA["properties"]["count"]
    assert SCHEMA["properties"]["flag"]["type"] == "boolean"  # the input is not modified


def test_a_shared_definition_is_read_through_its_local_ref() -> None:
    """Advertised schemas keep repeated types in $defs: form fields still coerce by the type they refer to."""
    root = {"$defs": {"Tags": {"type": "array", "items": {"type": "integer"}}}}
    tags = local({"$ref": "#/$defs/Tags"}, root)
    assert tags == root["$defs"]["Tags"]
    assert coerce("3", local(tags["items"], root)) == 3
    assert local({"$ref": "#/$defs/Missing"}, root) == {"$ref": "#/$defs/Missing"}


NESTED = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "text": {"type": "string"},
        "filters": {"$ref": "#/$defs/Filters"},
    },
    "$defs": {
        "Filters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"region": {"type": "string"}, "strict": {"type": "boolean"}},
        }
    },
}


def test_flat_form_fields_gather_into_their_object() -> None:
    flat = Flattened.of(NESTED, ["filters"])
    assert coerce("on", flat.schema("strict", NESTED)) is True  # read by the nested property's type
    assert flat.schema("text", NESTED) == {"type": "string"}
    nested = flat.nest({"text": "t", "region": "小樽", "strict": True})
    assert nested == {"text": "t", "filters": {"region": "小樽", "strict": True}}
    jsonschema.validate(nested, NESTED)
    assert flat.nest({"text": "t", "filters": {"region": "x"}}) == {"text": "t", "filters": {"region": "x"}}
    with pytest.raises(ToolError) as err:
        flat.nest({"filters": {"region": "x"}, "region": "y"})
    assert err.value.code == "BAD_REQUEST" and "not both" in str(err.value)
    assert Flattened.of(NESTED, []).nest({"region": "y"}) == {"region": "y"}  # no flattening: unknown, as before


def test_form_schema_documents_the_flat_fields_and_not_both() -> None:
    documented = form_schema(NESTED, ["filters"])
    assert set(documented["properties"]) == {"text", "filters", "region", "strict"}
    assert "(form bodies: filters.region)" in documented["properties"]["region"]["description"]
    jsonschema.validate({"text": "t", "region": "r", "strict": "on"}, documented)
    jsonschema.validate({"text": "t", "filters": {"region": "r"}}, documented)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"filters": {}, "region": "r"}, documented)
    assert "not" not in form_schema(NESTED)


def test_a_form_documents_no_empty_required_list_and_untyped_fields_as_text() -> None:
    """Twilio's `Items` (required, items `{}`): a form writes an empty list, or a null item, as no field at
    all, which the server reads as the list missing; so the documented form asks one item, and text."""
    schema = {
        "type": "object",
        "properties": {"Items": {"type": "array", "items": {}}, "Tags": {"type": "array", "items": {}}, "Note": {}},
        "required": ["Items"],
    }
    documented = form_schema(schema)
    assert documented["properties"]["Items"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert documented["properties"]["Tags"] == {"type": "array", "items": {"type": "string"}}  # optional: absent
    assert documented["properties"]["Note"] == {"type": "string"}
    assert schema["properties"]["Items"] == {"type": "array", "items": {}}  # the input is not modified
    assert form_schema(SCHEMA)["properties"]["tags"] == SCHEMA["properties"]["tags"]


def test_a_property_body_form_reads_its_fields_by_the_value_schema_and_its_alternatives() -> None:
    """Lob's `address_create` takes one property's value as its body, a `oneOf` of a US and an international
    address: its form's fields are the value's, read by the first alternative that declares each (the
    input schema, which declares only `body`, left every field text: `address_line2: "null"`, JSON text)."""
    root = {
        "type": "object",
        "properties": {"body": {"$ref": "#/$defs/Address"}},
        "$defs": {
            "Address": {"oneOf": [{"$ref": "#/$defs/Us"}, {"$ref": "#/$defs/Intl"}]},
            "Us": {
                "type": "object",
                "properties": {"zip": {"type": "integer"}, "line2": {"type": ["string", "null"], "maxLength": 3}},
            },
            "Intl": {"type": "object", "properties": {"zip": {"type": "string"}, "metadata": {"type": "object"}}},
        },
    }
    fields = value_fields(root["properties"]["body"], root)
    assert set(fields) == {"zip", "line2", "metadata"}
    assert from_text(["94107"], fields["zip"], root) == 94107
    assert from_text(["null"], fields["line2"], root) is None
    assert from_text(['{"a": "b"}'], fields["metadata"], root) == {"a": "b"}
