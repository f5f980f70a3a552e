"""Issue 45: `make cluster` fails fast when a dependency exits at start. Seen: Redis on a taken port exited
at once and the start waited its full 60 s. Here the project's own start_redis runs a real Redis on a port
a socket of this test holds: it must raise ClusterError naming the exit well within that wait. The daemons
that fork (nginx, supervisord) are watched through their pid file's process."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import servers

needs_redis = pytest.mark.skipif(servers.which("redis-server") is None, reason="no redis-server: make cluster-install")


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


@needs_redis
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


@needs_redis
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


def test_a_forking_daemon_whose_process_is_gone_is_reported_at_once(tmp_path: Path) -> None:
    """nginx and supervisord fork and write their pid file; once its process is gone, the wait ends."""
    exited = subprocess.Popen(["sleep", "0"])
    exited.wait()
    pid_file, log = tmp_path / "daemon.pid", tmp_path / "daemon.log"
    log.write_text("bind() to 127.0.0.1:8080 failed (98: Address already in use)\n")
    assert servers.gone(pid_file) is None  # no pid file yet: still starting
    pid_file.write_text(f"{exited.pid}\n")
    started = time.monotonic()
    with pytest.raises(servers.ClusterError) as raised:
        servers.wait_for(lambda: False, "nginx", log, timeout_s=60, exited=lambda: servers.gone(pid_file))
    assert time.monotonic() - started < 5
    assert str(raised.value).startswith(f"nginx exited while starting (PID {exited.pid} from daemon.pid is gone)")
    assert "Address already in use" in str(raised.value)
