"""Issue 35, item 3: alternatives of pairs name each group as the user typed it, on HTTP and MCP."""

from __future__ import annotations

from typing import Any

import pytest
from fastmcp import Client

from kumitate.transports.mcp import build_server
from tests.conftest import InProcessApp

pytestmark = pytest.mark.anyio

TEXT = "A&B か C&D か E&F のどれかが揃えばOK"
INVITEES = [{"user_id": str(i), "display_name": name} for i, name in enumerate("ABCDEF", start=1)]
GROUPS = [
    {"name": "A&B", "min": 2, "any_of_invitee_keys": ["u:1", "u:2"]},
    {"name": "C&D", "min": 2, "any_of_invitee_keys": ["u:3", "u:4"]},
    {"name": "E&F", "min": 2, "any_of_invitee_keys": ["u:5", "u:6"]},
]


def _check(body: dict[str, Any]) -> None:
    rule = body["attendance_rule"]
    assert (rule["type"], rule["rule"]) == ("GROUP_ANY", {"groups": GROUPS})
    assert (body["confidence"], body["needs_clarification"], body["missing"]) == (0.85, [], [])


async def test_groups_keep_the_typed_wording_over_http(in_process_app: InProcessApp) -> None:
    response = await in_process_app.http.post(
        "/v1/attendance/parse_attendance_intent", json={"text": TEXT, "invitees": INVITEES}
    )
    assert response.status_code == 200, response.text
    _check(response.json())


async def test_groups_keep_the_typed_wording_over_mcp(in_process_app: InProcessApp) -> None:
    async with Client(build_server(in_process_app.runtime, ["attendance"])) as client:
        result = await client.call_tool("parse_attendance_intent", {"text": TEXT, "invitees": INVITEES})
    assert result.structured_content is not None
    _check(result.structured_content)
