"""A REST-shaped answer's response headers read back as their properties' types (HttpShape.result), the
one reading the facade of an API (kumitate.forward), the typed HTTP client and the example runner
(kumitate.client.http.shaped_body) share: an integer header (Lob's `ratelimit-limit: 150`) is the integer
150, not the text '150' an example's `150` never equals."""

from __future__ import annotations

import httpx

from kumitate.client.http import shaped_body
from kumitate.httpshape import HttpShape

SHAPE = HttpShape(response_headers=(("RateLimit-Limit", "ratelimit_limit"), ("X-Cached", "cached"), ("ETag", "etag")))
OUTPUT = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "ratelimit_limit": {"type": "integer"},
        "cached": {"$ref": "#/$defs/Flag"},
        "etag": {"type": "string"},
    },
    "$defs": {"Flag": {"type": "boolean"}},
}
HEADERS = {"ratelimit-limit": "150", "x-cached": "true", "etag": "17"}


def test_a_header_is_read_as_its_property_type_given_the_output_schema() -> None:
    assert SHAPE.result({"id": "bg_1"}, HEADERS, OUTPUT) == {
        "id": "bg_1",
        "ratelimit_limit": 150,
        "cached": True,
        "etag": "17",
    }


def test_without_the_output_schema_a_header_stays_its_text() -> None:
    assert SHAPE.result({"id": "bg_1"}, HEADERS)["ratelimit_limit"] == "150"


def test_text_no_declared_type_fits_stays_text_for_the_schema_check_to_refuse() -> None:
    assert SHAPE.result(None, {"RateLimit-Limit": "many"}, OUTPUT) == {"ratelimit_limit": "many"}


def test_the_http_example_runner_reads_headers_as_their_types() -> None:
    response = httpx.Response(200, json={"id": "bg_1"}, headers={"RateLimit-Limit": "150"})
    assert shaped_body(SHAPE, response, OUTPUT) == {"id": "bg_1", "ratelimit_limit": 150}
