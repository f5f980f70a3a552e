"""yana's workflow invariant (handlers/yana/invariants.py), which the stateful fuzz checks over a server
subprocess, here over a private service in process: it holds after a real ingest, it is skipped where
there is nothing to search by, and it reports a label its brand's search does not find."""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import Any

from conftest import ctx
from PIL import Image

from handlers.yana import YanaHandlers
from handlers.yana.invariants import INVARIANTS
from kumitate.errors import ToolError
from kumitate.invariants import Step

[FOUND_BY_BRAND] = INVARIANTS


def caller(yana: YanaHandlers) -> Any:
    def call(tool: str, arguments: Mapping[str, Any]) -> Step:
        try:
            return Step(tool, arguments, getattr(yana, tool)(dict(arguments), ctx()))
        except ToolError as exc:
            return Step(tool, arguments, error=exc.code)

    return call


def png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (48, 64), (90, 20, 160)).save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_an_ingested_label_is_found_by_its_brand(fresh: YanaHandlers) -> None:
    call = caller(fresh)
    step = call("ingest", {"image": png(), "brand_name": "検査用銘柄"})
    assert step.ok and step.result is not None and step.result["dedup"] is False
    assert FOUND_BY_BRAND.check(step, call, {}) is None


def test_nothing_to_search_by_is_not_checked(yana: YanaHandlers) -> None:
    call = caller(yana)  # the shared read-only service: these only search
    assert FOUND_BY_BRAND.check(Step("ingest", {"brand_name": "  "}, {"id": "x"}), call, {}) is None
    assert FOUND_BY_BRAND.check(Step("ingest", {"brand_name": "獺祭"}, {"id": "x", "dedup": True}), call, {}) is None


def test_a_label_its_brand_does_not_find_is_reported(yana: YanaHandlers) -> None:
    step = Step("ingest", {"brand_name": "獺祭"}, {"id": "label_never_stored", "dedup": False})
    problem = FOUND_BY_BRAND.check(step, caller(yana), {})
    assert problem is not None
    assert problem.startswith("label label_never_stored (brand '獺祭') is not among the newest hits for its brand")


def test_a_failing_search_is_reported(yana: YanaHandlers) -> None:
    step = Step("ingest", {"brand_name": "x" * 5000}, {"id": "label_u_1", "dedup": False})
    problem = FOUND_BY_BRAND.check(step, caller(yana), {})
    assert problem == "search by the brand just ingested failed with BAD_REQUEST"
