"""Export handles are bound to their creator; "admin" or "*" reads all (issue 21)."""

from __future__ import annotations

import pytest

from generated.analytics.models import ExportInput, Format
from handlers.analytics import AnalyticsHandlers
from handlers.analytics.core.service import AnalyticsService
from kumitate.context import CallContext, Principal
from kumitate.errors import ToolError

from .conftest import call_context

QUERY = ExportInput(query="SELECT activity_id, distance_km FROM activities ORDER BY 1", format=Format.csv)


def ctx(principal: Principal) -> CallContext:
    return call_context("export", principal)


ALICE = Principal("alice", frozenset({"analytics"}))
BOB = Principal("bob", frozenset({"analytics"}))
ADMIN = Principal("ops", frozenset({"analytics", "admin"}))
STAR = Principal("root", frozenset({"*"}))


@pytest.fixture
def handlers(service: AnalyticsService) -> AnalyticsHandlers:
    return AnalyticsHandlers(service, sweep_interval_s=None)


def test_only_the_creator_and_admins_read_an_export(handlers: AnalyticsHandlers) -> None:
    handle = handlers.export(QUERY, ctx(ALICE)).handle
    mine = handlers.read_export_file(ctx(ALICE), handle=handle)
    assert mine.data.startswith(b"activity_id,distance_km")
    for reader in (ADMIN, STAR):
        assert handlers.read_export_file(ctx(reader), handle=handle).data == mine.data
    with pytest.raises(ToolError) as info:
        handlers.read_export_file(ctx(BOB), handle=handle)
    # Indistinguishable from a handle that never existed.
    assert info.value.code == "EXPORT_NOT_FOUND"
    with pytest.raises(ToolError) as never:
        handlers.read_export_file(ctx(BOB), handle="0" * 32)
    assert never.value.message == info.value.message


def test_a_scope_named_like_admin_is_not_admin(handlers: AnalyticsHandlers) -> None:
    handle = handlers.export(QUERY, ctx(ALICE)).handle
    for scopes in ({"analytics", "admins"}, {"analytics:admin"}, {"Admin"}):
        with pytest.raises(ToolError):
            handlers.read_export_file(ctx(Principal("eve", frozenset(scopes))), handle=handle)
