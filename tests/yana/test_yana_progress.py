"""Ingest reports progress per phase (read, check, store); a call cancelled before its commit stores nothing."""

from __future__ import annotations

import pytest
from conftest import ctx
from test_yana_ingest import image_b64

from handlers.yana import YanaHandlers
from kumitate.context import CallCancelled, bound, state_of


def test_ingest_reports_its_phases(fresh: YanaHandlers) -> None:
    call = ctx("ingest")
    seen: list[float] = []
    state_of(call).progress_sink = lambda done, total, message: seen.append(done)
    with bound(call):
        fresh.ingest({"image": image_b64(), "brand_name": "進捗"}, call)
    assert seen == [0, 1, 2]


def test_a_cancelled_ingest_stores_nothing(fresh: YanaHandlers) -> None:
    call = ctx("ingest")
    before = fresh.kb.count()
    uploads = set(fresh.uploads.glob("*")) if fresh.uploads.exists() else set()

    def cancel_at_store(done: float, total: float | None, message: str | None) -> None:
        if done == 2:  # the last report before the write: the commit gate now refuses
            state_of(call).cancel()  # as the pipeline does when the caller goes away

    state_of(call).progress_sink = cancel_at_store
    with bound(call), pytest.raises(CallCancelled):
        fresh.ingest({"image": image_b64(color=(1, 2, 3)), "brand_name": "取消"}, call)
    assert fresh.kb.count() == before
    assert set(fresh.uploads.glob("*")) == uploads  # the image written for it is removed again
