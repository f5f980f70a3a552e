"""A facade's path parameter in the style the API reads it (ReadMe's parameter styles: `label` `.x`,
`matrix` `;name=x`): the call sent on to the API is written in it (kumitate.forward asks `styled`), while
kumitate's own route, its clients and example runners use the segment itself."""

from __future__ import annotations

from kumitate.httpshape import HttpShape, Param

SHAPE = HttpShape(
    params=(
        Param("path", "primitive", "primitive", "label"),
        Param("path", "array", "array", "matrix"),
        Param("path", "id", "id"),
    )
)
ROUTE = "/things/{primitive}/{array}/{id}"
ARGUMENTS = {"primitive": "a b", "array": "x,y", "id": 7}


def test_the_call_sent_on_writes_each_path_parameter_in_its_style() -> None:
    assert SHAPE.request(ROUTE, ARGUMENTS, "GET", styled=True).path == "/things/.a%20b/;array=x%2Cy/7"


def test_kumitate_own_route_reads_the_segment_itself() -> None:
    assert SHAPE.request(ROUTE, ARGUMENTS, "GET").path == "/things/a%20b/x%2Cy/7"


def test_a_spec_names_the_style_and_simple_is_the_default() -> None:
    http = {"params": [{"in": "path", "name": "primitive", "style": "label"}, {"in": "path", "name": "id"}]}
    shape = HttpShape.parse(http, "/{primitive}/{id}")
    assert [(p.name, p.style) for p in shape.params] == [("primitive", "label"), ("id", "simple")]
