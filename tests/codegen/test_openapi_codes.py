"""The OpenAPI document of every operation lists exactly the error codes, and so the statuses, the HTTP
wire can send for it: what the runtime lets the call end with (its binding's `allowed`: declared, generic,
policy's; kumitate.policies.spec) and what the HTTP edge answers on any route. Derived from the runtime's own
bindings (their typed policy, as generated/<svc>/bindings.py builds it), never restated here."""

from __future__ import annotations

import json
from typing import Any

import pytest

from generated.errors import CATALOGUE
from generated.registry import SERVICES
from kumitate.bindings import ResourceBinding, ToolBinding
from kumitate.policies.spec import HTTP_EDGE_CODES
from tests.conftest import REPO

DOC: dict[str, Any] = json.loads((REPO / "generated" / "openapi.json").read_text(encoding="utf-8"))
BINDINGS: list[ToolBinding | ResourceBinding] = [
    b for svc in SERVICES.values() if not svc.opt_in for b in (*svc.tools, *svc.resources)
]


def _documented(binding: ToolBinding | ResourceBinding) -> tuple[set[str], set[str]]:
    """(codes, statuses) of the operation's error responses in the document."""
    method = binding.http_method.lower() if isinstance(binding, ToolBinding) else "get"
    responses = DOC["paths"][binding.http_path][method]["responses"]
    errors = {status: r for status, r in responses.items() if not status.startswith("2")}
    codes = {code for r in errors.values() for code in r["content"]["application/json"]["examples"]}
    return codes, set(errors)


@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.key)
def test_the_document_lists_exactly_what_the_wire_can_send(binding: ToolBinding | ResourceBinding) -> None:
    wire = binding.allowed | HTTP_EDGE_CODES
    codes, statuses = _documented(binding)
    assert codes == wire, f"documented but never sent: {codes - wire}; sent but undocumented: {wire - codes}"
    assert statuses == {str(CATALOGUE[code].status) for code in wire}


def test_every_operation_of_every_service_is_checked() -> None:
    served = {(p, m) for p, item in DOC["paths"].items() for m in item if not p.startswith("/v1/operations")}
    assert len(served) == len(BINDINGS) > 0
