"""`CallContext.url_for`: a resource's address from the spec's route, never spelled by a handler."""

from __future__ import annotations

import pytest

from generated.household.bindings import RESOURCE_CHART, SERVICE
from kumitate.context import CallContext, bound, url_for


def _ctx(public_url: str = "http://api.example:8000") -> CallContext:
    return SERVICE.direct_call("get_monthly_household", public_url)


def test_the_route_comes_from_the_spec_and_the_parameter_is_encoded() -> None:
    url = _ctx().url_for("chart", chart_id="a b/c")
    assert url == "http://api.example:8000" + RESOURCE_CHART.http_path.replace("{chart_id}", "a%20b%2Fc")


def test_the_module_function_answers_for_the_current_call() -> None:
    ctx = _ctx("https://public.example/")
    with bound(ctx):
        assert url_for("chart", chart_id="x").startswith("https://public.example/")
    with pytest.raises(LookupError, match="outside a call"):
        url_for("chart", chart_id="x")


def test_an_unknown_resource_or_a_wrong_parameter_is_a_programming_error() -> None:
    ctx = _ctx()
    with pytest.raises(LookupError, match=r"no resource .charts.*chart"):
        ctx.url_for("charts", chart_id="x")
    with pytest.raises(TypeError, match=r"takes \[.chart_id.\]"):
        ctx.url_for("chart", id="x")
    with pytest.raises(TypeError):
        ctx.url_for("chart")
