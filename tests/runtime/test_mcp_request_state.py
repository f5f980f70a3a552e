"""MCP `requestState` (2026-07-28 multi-round calls) is signed: a retry gets back only the answers
this server handed out; anything altered, or sealed under another key, is JSON-RPC -32602 (SEP-2322)."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from kumitate.transports.mcp.elicit import seal, unseal

KEY = b"k" * 32
ANSWERS = {"confirm": {"ok": True}, "name": {"name": "花子"}}


def test_a_sealed_state_reads_back_its_answers() -> None:
    assert unseal(seal(ANSWERS, KEY), KEY) == ANSWERS
    assert unseal(seal({}, KEY), KEY) == {}


@pytest.mark.parametrize(
    "tamper",
    [
        lambda state: state + "-TAMPERED",  # what the conformance suite sends
        lambda state: seal({"confirm": {"ok": False}}, KEY).partition(".")[0] + "." + state.partition(".")[2],
        lambda state: state.partition(".")[0],  # the signature dropped
        lambda state: '{"confirm": {"ok": true}}',  # the unsigned form served before
        lambda state: seal(ANSWERS, b"another instance's key"),
    ],
)
def test_an_altered_state_is_refused_as_invalid_params(tamper: object) -> None:
    state = seal(ANSWERS, KEY)
    with pytest.raises(MCPError) as refused:
        unseal(tamper(state), KEY)  # type: ignore[operator]
    assert refused.value.error.code == -32602
