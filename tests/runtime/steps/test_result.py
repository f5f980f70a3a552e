"""The result step, shared by tools and resources: envelope fields, then the output check."""

from __future__ import annotations

import jsonschema_rs
import pytest

from kumitate.bindings import ServiceBinding
from kumitate.errors import ToolError
from kumitate.steps.result import OutputCheck, Result
from tests.runtime.steps.helpers import make_call, ok
from tests.runtime.test_pipeline import OUTPUT

pytestmark = pytest.mark.anyio


def service(envelope: list[str]) -> ServiceBinding:
    return ServiceBinding(
        name="demo",
        title="Demo",
        version="1.0.0",
        description="d",
        instructions="",
        versions={"server_version": "9.9.9", "policy_version": "p1"},
        success_envelope=envelope,
        tools=(),
        resources=(),
        create_handlers=lambda s: None,
    )


async def test_envelope_adds_the_declared_fields_only() -> None:
    outcome = await Result(service(["run_id", "server_version"]), None)(make_call(), ok({"n": 1}))
    assert outcome.body == {"n": 1, "run_id": "run-1", "server_version": "9.9.9"}


async def test_invalid_output_is_never_sent() -> None:
    check = OutputCheck(jsonschema_rs.Draft202012Validator(OUTPUT))
    assert (await Result(service([]), check)(make_call(), ok({"n": 1}))).ok
    with pytest.raises(ToolError) as refused:
        await Result(service([]), check)(make_call(), ok({"n": "one"}))
    assert refused.value.code == "INTERNAL"


async def test_bytes_pass_unchecked() -> None:
    check = OutputCheck(jsonschema_rs.Draft202012Validator(OUTPUT))
    assert (await Result(service(["run_id"]), check)(make_call(), ok(b"%PDF"))).body == b"%PDF"
