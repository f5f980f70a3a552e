"""Run inside `unshare -m` (a private mount namespace) by tests/e2e/test_storage_faults.py.

    storage_driver.py full <dir>      serve on a small tmpfs, fill it, call tools, free it, call again
                                      (from a copy of DRIVER_SEEDED, a seeded data directory, if set)
    storage_driver.py readonly <dir>  start `serve` and `mcp --stdio` on a read-only tmpfs

Prints one JSON report on stdout; the test asserts on it. Mounts vanish with the namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.conftest import K_OF_N_RULE, free_port, server_env  # noqa: E402

RULE = K_OF_N_RULE
CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("write", "/v1/attendance/save_attendance_rule", {"thread_id": "full-disk", "rule": RULE}),
    ("write", "/v1/analytics/export", {"query": "SELECT 1 AS x", "format": "csv"}),
    ("write", "/v1/household/detect_duplicates", {}),
    ("read", "/v1/attendance/get_attendance_rule", {"thread_id": "demo-k-of-n"}),
    ("read", "/v1/household/get_monthly_household", {"year": 2025, "month": 1}),
    ("read", "/v1/search", {"query_text": "獺祭", "k": 5}),
]


def mount(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)


def fill(path: Path) -> Path:
    """Write until the kernel says ENOSPC, in big then small unbuffered writes."""
    filler = path / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)
    return filler


def call_all(url: str) -> list[dict[str, Any]]:
    report = []
    for kind, path, body in CALLS:
        r = httpx.post(url + path, json=body, timeout=60)
        error = r.json().get("error", {}) if r.headers.get("content-type", "").startswith("application/json") else {}
        report.append(
            {
                "kind": kind,
                "path": path,
                "status": r.status_code,
                "code": error.get("code"),
                "retry_after": r.headers.get("retry-after"),
                "message": error.get("message"),
            }
        )
    return report


def health(url: str) -> dict[str, Any]:
    live = httpx.get(url + "/healthz", timeout=30)
    r = httpx.get(url + "/readyz", timeout=30)
    yana = httpx.get(url + "/v1/healthz", timeout=30)
    return {
        "live_status": live.status_code,
        "live_storage": live.json()["storage"],
        "status": r.status_code,
        "body": r.json(),
        "retry_after": r.headers.get("retry-after"),
        "yana_status": yana.status_code,
        "yana_code": yana.json().get("error", {}).get("code"),
    }


def full(data_dir: Path) -> dict[str, Any]:
    mount(data_dir, "size=256m")
    if seeded := os.environ.get("DRIVER_SEEDED"):
        shutil.copytree(seeded, data_dir, dirs_exist_ok=True)  # no first-start import to wait for
    port = free_port()
    log = Path(os.environ.get("DRIVER_LOG", "/dev/null"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kumitate", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=REPO,
        env=server_env(data_dir),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("server did not start")
            time.sleep(0.3)
        report: dict[str, Any] = {"before": call_all(url)}
        filler = fill(data_dir)
        report["full"] = call_all(url)
        report["health_full"] = health(url)
        filler.unlink()
        report["health_freed"] = health(url)
        report["freed"] = call_all(url)
        return report
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def readonly(data_dir: Path) -> dict[str, Any]:
    mount(data_dir, "size=8m")
    subprocess.run(["mount", "-o", "remount,ro", str(data_dir)], check=True)
    runs = {}
    for name, args in {
        "serve": ["serve", "--host", "127.0.0.1", "--port", str(free_port())],
        "mcp": ["mcp", "--stdio"],
    }.items():
        done = subprocess.run(
            [sys.executable, "-m", "kumitate", *args],
            cwd=REPO,
            env=server_env(data_dir),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=120,
        )
        runs[name] = {"returncode": done.returncode, "stderr": done.stderr.decode("utf-8", errors="replace")}
    return runs


if __name__ == "__main__":
    mode, target = sys.argv[1], Path(sys.argv[2])
    print(json.dumps({"full": full, "readonly": readonly}[mode](target), ensure_ascii=False))
