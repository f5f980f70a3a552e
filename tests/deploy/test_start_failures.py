"""Issue 45: `make cluster` fails fast when a dependency exits at start. Seen: Redis on a taken port exited
at once and the start waited its full 60 s. Here the project's own start_redis runs a real Redis on a port
a socket of this test holds: it must raise ClusterError naming the exit well within that wait."""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import servers

pytestmark = pytest.mark.skipif(servers.which("redis-server") is None, reason="no redis-server: make cluster-install")


@pytest.fixture
def server_dir() -> Iterator[Path]:
    """A directory the service user can reach (pytest's tmp_path is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="kumitate-start-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        servers.stop_redis(directory, fast=True)
        shutil.rmtree(directory, ignore_errors=True)


def test_redis_that_exits_at_start_is_reported_at_once(server_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        started = time.monotonic()
        with pytest.raises(servers.ClusterError) as raised:
            servers.start_redis(server_dir, port)
        seconds = time.monotonic() - started
    message = str(raised.value)
    assert seconds < 10, f"took {seconds:.1f} s to notice: {message}"
    assert message.startswith(f"Redis exited while starting (status 1 on port {port}")
    assert "did not answer" not in message
    assert str(port) in message.partition("log ")[2], message  # the log's tail says which port was taken


def test_redis_on_a_free_port_starts_and_stops(server_dir: Path) -> None:
    """The same start, on a free port: Redis answers, and stopping it leaves nothing running."""
    port = servers.free_port()
    assert servers.start_redis(server_dir, port) == f"redis://127.0.0.1:{port}/0"
    pid = servers.verified(server_dir / "redis" / "redis.pid")
    assert pid is not None and servers.port_answers(port)
    servers.stop_redis(server_dir)
    assert not servers.alive(pid)
    with pytest.raises(OSError):
        servers.port_answers(port)
