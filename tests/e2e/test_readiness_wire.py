"""/healthz and /readyz on a real server: liveness stays up, readiness follows every engine it needs."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import LiveServer, free_port, start_server, stop_server

pytestmark = pytest.mark.slow


def test_ready_when_every_engine_answers(live_server: LiveServer) -> None:
    ready = httpx.get(f"{live_server.url}/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"] == {"data_dir": {"ok": True}, "database": {"ok": True}}
    live = httpx.get(f"{live_server.url}/healthz").json()
    assert live["ok"] is True and live["storage"] == {"ok": True}


def test_not_ready_while_redis_is_unreachable(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("readyz")
    nobody = f"redis://127.0.0.1:{free_port()}/0"  # a port nothing listens on
    server = start_server(root / "var", root / "server.log", KUMITATE_REDIS_URL=nobody)
    try:
        ready = httpx.get(f"{server.url}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.headers["retry-after"] == "5"
        checks = ready.json()["checks"]
        assert checks["redis"]["ok"] is False and checks["database"] == {"ok": True}
        assert "127.0.0.1" not in ready.text  # reasons, never addresses or credentials
        assert httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200
    finally:
        stop_server(server)
