"""kumitate.writeonly: a facade leaves out of an API's answer what the document marks `writeOnly`."""

from __future__ import annotations

from kumitate.writeonly import object_without_write_only, without_write_only

ROOT = {
    "type": "object",
    "properties": {
        "user": {"$ref": "#/$defs/User"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/MenuItem"}},
        "note": {"type": "string"},
    },
    "$defs": {
        "User": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "password": {"type": "string", "writeOnly": True}},
        },
        "Secret": {"type": "string", "writeOnly": True},
        "Base": {"type": "object", "properties": {"id": {"type": "string"}, "photo": {"$ref": "#/$defs/Secret"}}},
        "Drink": {"allOf": [{"properties": {"volume": {"type": "number"}}}, {"$ref": "#/$defs/Base"}]},
        "MenuItem": {"oneOf": [{"$ref": "#/$defs/Drink"}, {"$ref": "#/$defs/Base"}]},
    },
}


def test_write_only_properties_are_left_out_at_any_depth_and_through_alternatives() -> None:
    answer = {
        "user": {"name": "a", "password": "hunter2"},
        "items": [{"id": "1", "volume": 3, "photo": "raw"}, {"id": "2"}],
        "note": "kept",
        "extra": {"password": "not this schema's"},
    }
    assert object_without_write_only(answer, ROOT, ROOT) == {
        "user": {"name": "a"},
        "items": [{"id": "1", "volume": 3}, {"id": "2"}],
        "note": "kept",
        "extra": {"password": "not this schema's"},
    }
    assert answer["user"] == {"name": "a", "password": "hunter2"}  # the answer itself is not changed


def test_what_is_no_object_or_list_is_as_it_was() -> None:
    assert without_write_only("text", {"type": "string", "writeOnly": True}, ROOT) == "text"
    assert without_write_only([1, None], {"type": "array", "items": {"$ref": "#/$defs/User"}}, ROOT) == [1, None]
