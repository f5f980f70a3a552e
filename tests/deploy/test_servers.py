"""Issue 45: stopping a cluster's server signals only the process recorded for its pid file. A pid file
whose process exited and whose PID now belongs to another program (here a `sleep` the test starts),
or one without a recorded identity (an earlier release's), leaves that program running; a recorded
process is stopped. Real processes, real /proc."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import servers


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A program that is not ours to stop: the test kills it itself at the end. Returned once it runs
    `sleep` (between fork and exec /proc shows the parent's image, then an empty command line)."""
    process = subprocess.Popen(["sleep", "30"])
    deadline = time.monotonic() + 10
    while (found := servers.identity(process.pid)) is None or found.cmdline != "sleep 30":
        assert time.monotonic() < deadline, "sleep did not start within 10 s"
        time.sleep(0.01)
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def still_running(process: subprocess.Popen[bytes]) -> bool:
    time.sleep(0.2)  # a signal sent would have been delivered by now
    return process.poll() is None and servers.identity(process.pid) is not None


def test_a_pid_reused_by_another_process_is_not_signalled(
    stranger: subprocess.Popen[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pid file and its identity name a server that exited; its PID now belongs to the `sleep`."""
    pid_file = tmp_path / "redis.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    real = servers.identity(stranger.pid)
    assert real is not None and real.cmdline == "sleep 30"
    servers.identity_file(pid_file).write_text(
        json.dumps({"pid": stranger.pid, "start": real.start - 1, "cmdline": "redis-server 127.0.0.1:6379"})
    )
    assert servers.stop_pid(pid_file, signal.SIGKILL, timeout_s=1) == "stale"
    assert still_running(stranger)
    assert not pid_file.exists() and not servers.identity_file(pid_file).exists()
    assert f"not signalling PID {stranger.pid} named in {pid_file}: it is now another process (sleep 30)" in (
        capsys.readouterr().err
    )


def test_a_pid_file_without_an_identity_is_not_signalled(
    stranger: subprocess.Popen[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pid file as an earlier release left it: a bare PID, nothing to tell the server from a stranger."""
    pid_file = tmp_path / "nginx.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    assert servers.stop_pid(pid_file) == "unverified"
    assert still_running(stranger)
    assert pid_file.exists(), "kept: it may still name the server, for whoever stops it by hand"
    err = capsys.readouterr().err
    assert f"not signalling PID {stranger.pid} named in {pid_file}: no identity was recorded" in err
    assert "(sleep 30)" in err and err.count("\n") == 1


def test_an_identity_of_another_pid_does_not_vouch_for_the_file(
    stranger: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    """The daemon rewrote its pid file (a restart) after the identity was recorded: not verified."""
    pid_file = tmp_path / "supervisord.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    assert servers.record(pid_file, "sleep")
    pid_file.write_text(f"{stranger.pid + 100000}\n")
    assert servers.recorded(pid_file) is None
    pid_file.write_text(f"{stranger.pid}\n")
    assert servers.recorded(pid_file) == servers.identity(stranger.pid)


def test_recording_refuses_a_process_that_is_not_the_daemon(stranger: subprocess.Popen[bytes], tmp_path: Path) -> None:
    pid_file = tmp_path / "redis.pid"
    pid_file.write_text(f"{stranger.pid}\n")
    assert not servers.record(pid_file, "redis-server")
    assert not servers.identity_file(pid_file).exists()
    assert servers.stop_pid(pid_file) == "unverified"
    assert still_running(stranger)


def test_a_recorded_process_is_stopped(tmp_path: Path) -> None:
    process = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "sleep.pid"
        pid_file.write_text(f"{process.pid}\n")
        assert servers.record(pid_file, "sleep")
        assert servers.verified(pid_file) == process.pid
        assert servers.stop_pid(pid_file) == "stopped"
        assert process.wait(timeout=5) in (-signal.SIGTERM, 0)  # 0: stop_pid reaped its own child first
        assert servers.identity(process.pid) is None
        assert not pid_file.exists() and not servers.identity_file(pid_file).exists()
    finally:
        process.kill()
        process.wait()


def test_a_recorded_process_that_ignores_sigterm_is_killed(tmp_path: Path) -> None:
    code = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(30)"
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None and process.stdout.readline() == b"\n"  # SIGTERM is ignored from here
        pid_file = tmp_path / "stubborn.pid"
        pid_file.write_text(f"{process.pid}\n")
        assert servers.record(pid_file, "SIG_IGN")
        assert servers.stop_pid(pid_file, timeout_s=0.5) == "stopped"
        assert process.wait(timeout=5) in (-signal.SIGKILL, 0)
        assert servers.identity(process.pid) is None
    finally:
        process.kill()
        process.wait()


def test_a_process_that_exited_leaves_a_file_that_is_removed(tmp_path: Path) -> None:
    process = subprocess.Popen(["sleep", "30"])
    pid_file = tmp_path / "redis.pid"
    pid_file.write_text(f"{process.pid}\n")
    assert servers.record(pid_file, "sleep")
    process.kill()
    process.wait()
    assert servers.verified(pid_file) is None
    assert servers.stop_pid(pid_file) == "gone"
    assert not pid_file.exists() and not servers.identity_file(pid_file).exists()
