"""Tool and property names (codegen/importer/names.py)."""

from __future__ import annotations

import pytest

from codegen.importer import names


@pytest.mark.parametrize(
    ("text", "expected"),
    [("getPetById", "get_pet_by_id"), ("X-Request-ID", "x_request_id"), ("page[size]", "page_size"), ("蔵書", "")],
)
def test_snake(text: str, expected: str) -> None:
    assert names.snake(text) == expected


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/pets/{petId}", "get_pet"),
        ("GET", "/pets", "list_pets"),
        ("POST", "/pets", "create_pet"),
        ("GET", "/pets/{petId}/toys", "list_pet_toys"),
        ("DELETE", "/users/{u}/categories/{c}", "delete_user_category"),
        ("GET", "/health", "get_health"),
        ("PATCH", "/", "update_root"),
    ],
)
def test_names_from_the_route(method: str, path: str, expected: str) -> None:
    assert names.from_route(method, path, []) == expected


def test_a_prefix_every_path_shares_says_nothing() -> None:
    prefix = names.common_prefix(["/api/v2/pets", "/api/v2/pets/{id}", "/api/v2/owners"])
    assert prefix == ["api", "v2"]
    assert names.from_route("GET", "/api/v2/pets/{id}", prefix) == "get_pet"


def test_names_are_unique_short_and_no_keywords() -> None:
    taken = {"get_pet"}
    assert names.tool_name("getPet", "GET", "/pets/{id}", [], taken) == "get_pet_2"
    assert names.tool_name("import", "POST", "/imports", [], taken) == "import_operation"
    long = names.tool_name("x" * 30 + "_" + "y" * 40, "GET", "/", [], taken)
    assert len(long) <= 64


def test_the_property_rule() -> None:
    """A snake_case wire name keeps its name; one that is no identifier gets its snake_case; a taken one
    its location as a prefix."""
    taken = {"id", "name"}
    assert names.property_name("limit", "query", taken) == "limit"
    assert names.property_name("id", "query", taken) == "query_id"
    assert names.property_name("X-Request-ID", "header", taken) == "x_request_id"
    assert names.property_name("x_request_id", "query", taken) == "query_x_request_id"
    assert names.property_name("petId", "path", taken) == "pet_id"
    assert names.property_name("name", "header", taken) == "header_name"
