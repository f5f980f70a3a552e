"""/healthz and /readyz, in process: liveness stays up, readiness follows every engine it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import InProcessApp, free_port, serve_in_process

pytestmark = pytest.mark.anyio


async def test_ready_when_every_engine_answers(in_process_app: InProcessApp) -> None:
    ready = await in_process_app.http.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"data_dir": {"ok": True}, "database": {"ok": True}}
    live = (await in_process_app.http.get("/healthz")).json()
    assert live["ok"] is True and live["storage"] == {"ok": True}


async def test_still_ready_while_redis_is_unreachable(tmp_path: Path, seeded_data_dir: Path) -> None:
    """Without Redis the runtime degrades (per-instance rate limits, a cache miss) and keeps serving:
    the check says so, and the instance stays in rotation."""
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # a port nothing listens on
    async with serve_in_process(tmp_path / "var", seeded_data_dir, KUMITATE_REDIS_URL=nobody) as served:
        ready = await served.http.get("/readyz")
        assert ready.status_code == 200
        checks = ready.json()["checks"]
        assert checks["redis"]["ok"] is False and "per instance" in checks["redis"]["degraded"]
        assert checks["database"] == {"ok": True}
        assert "127.0.0.1" not in ready.text  # reasons, never addresses or credentials
        call = await served.http.post(
            "/v1/search", json={"query_text": "獺祭", "k": 1}
        )  # rate-limited: per instance now
        assert call.status_code == 200, call.text
        assert (await served.http.get("/healthz")).status_code == 200


async def test_not_ready_while_draining(in_process_app: InProcessApp) -> None:
    runtime = in_process_app.runtime
    runtime.draining.set()
    try:
        ready = await in_process_app.http.get("/readyz")
        assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
        assert ready.json()["draining"] is True
        served = await in_process_app.http.get("/healthz")
        assert served.status_code == 200  # alive: finishing its calls, but no connection kept for the next one
        assert ready.headers["connection"] == served.headers["connection"] == "close"
    finally:
        runtime.draining.clear()
    ready = await in_process_app.http.get("/readyz")
    assert ready.status_code == 200 and ready.headers.get("connection") != "close"
