"""A REST-shaped tool's operation in the OpenAPI document (codegen.openapi_shape): the request body is
the input less what travels in the path, query or headers, in JSON and in a form alike (a form schema
that listed a path parameter made schemathesis send it twice, and the route refuse it)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from codegen import openapi_shape
from codegen.specs import ToolSpec
from kumitate.bindings import Annotations
from kumitate.httpshape import Body, HttpShape, Param

INPUT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["dataset", "criteria"],
    "properties": {
        "dataset": {"type": "string", "description": "Which data set."},
        "criteria": {"type": "string"},
        "rows": {"type": "integer", "minimum": 1, "maximum": 100},
    },
}


def _tool(content_types: list[str]) -> ToolSpec:
    return ToolSpec(
        service="uspto",
        name="search",
        summary="s",
        description="d",
        errors=[],
        policy={},
        source=Path("search.yaml"),
        raw={},
        input_schema=INPUT,
        output_schema={"type": "object"},
        http_method="POST",
        http_path="/v1/uspto/{dataset}/records",
        content_types=content_types,
        annotations=Annotations(),
        deprecated=None,
        examples=[],
        http_shape=HttpShape(params=(Param("path", "dataset", "dataset"),)),
    )


def test_the_body_leaves_out_the_path_parameter_in_json_and_in_a_form() -> None:
    schemas = {"SearchInput": INPUT}
    tool = _tool(["application/json", "application/x-www-form-urlencoded"])
    content = {media: {"schema": {"$ref": "#/components/schemas/SearchInput"}} for media in tool.content_types}
    body = openapi_shape.request_body(tool, schemas, "SearchInput", content)
    assert body is not None and body["required"] is True
    for media in tool.content_types:
        schema = body["content"][media]["schema"]
        assert set(schema["properties"]) == {"criteria", "rows"}, media
        assert schema["required"] == ["criteria"], media
    [param] = openapi_shape.parameters(tool, schemas, "SearchInput")
    assert param == {
        "name": "dataset",
        "in": "path",
        "description": "Which data set.",
        "required": True,
        "schema": {"type": "string"},
    }


def test_a_body_with_nothing_left_is_no_body() -> None:
    tool = _tool(["application/json"])
    shape = HttpShape(params=tuple(Param("query", name, name) for name in INPUT["properties"]))
    tool = dataclasses.replace(tool, http_shape=shape)
    assert openapi_shape.request_body(tool, {"SearchInput": INPUT}, "SearchInput", {"application/json": {}}) is None


def test_a_form_of_a_property_body_is_the_property_value_fields() -> None:
    """Lob's `address_create` sends one property's value as its body (`body: {property: body}`), as JSON or a
    form: the form's fields are the value's fields, as the form reader takes them, not an object holding the
    value (schemathesis sent a field `body`, which the tool refused as the value itself)."""
    address = {"type": "object", "required": ["line1"], "properties": {"line1": {"type": "string"}}}
    either = {"oneOf": [address, {"type": "object", "required": ["zip"], "properties": {"zip": {"type": "string"}}}]}
    schemas = {"CreateInput": {"type": "object", "required": ["body"], "properties": {"body": either}}}
    media = ["application/json", "application/x-www-form-urlencoded"]
    tool = dataclasses.replace(_tool(media), http_shape=HttpShape(body=Body("property", "body")))
    content = {m: {"schema": {"$ref": "#/components/schemas/CreateInput"}} for m in media}
    body = openapi_shape.request_body(tool, schemas, "CreateInput", content)
    assert body is not None
    assert body["content"]["application/json"]["schema"] == either
    assert body["content"]["application/x-www-form-urlencoded"]["schema"] == either
    schemas["CreateInput"]["properties"]["body"] = address
    body = openapi_shape.request_body(tool, schemas, "CreateInput", content)
    assert body is not None and body["content"]["application/x-www-form-urlencoded"]["schema"]["properties"] == {
        "line1": {"type": "string"}
    }
