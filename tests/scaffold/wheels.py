"""kumitate's wheel and the environments the scaffold tests run it in, outside this repository.

The wheel is built from a copy of what it packages (so the build leaves no egg-info in the checkout).
`make test` runs it in a fresh venv that holds the wheel alone, its dependencies found installed (links to
this environment's); `make test-package` installs it with its ~100 dependencies the way a new team does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import httpx

from tests.conftest import REPO, free_port

ENV = {k: v for k, v in os.environ.items() if not k.startswith(("KUMITATE_", "PYTHON", "VIRTUAL_ENV", "MYPY_"))}
ENV["PIP_NO_COMPILE"] = "1"  # an install of the wheel (and its dependencies) skips byte-compiling them
PACKAGES = ("kumitate", "codegen")
PACKAGING = ("kumitate", "__editable__", "pip", "setuptools", "pkg_resources", "_distutils_hack", "distutils-", "wheel")


def run(command: list[str], cwd: Path, timeout: float = 900, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)
    if ok:
        assert done.returncode == 0, f"{' '.join(command)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def commit_all(project: Path, message: str) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    if not (project / ".git").exists():
        run(["git", "init", "-q", "-b", "main"], project)
    run(["git", "add", "-A"], project)
    run([*git, "commit", "-q", "-m", message], project)


def build_wheel(root: Path) -> Path:
    """kumitate's wheel, built under `root` from a copy of what it packages."""
    source = root / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package, ignore=ignore)  # follows codegen/meta -> specs/_meta
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(root / "dist")], root)
    return next((root / "dist").glob("kumitate-*.whl"))


def installed_dependencies(target: Path) -> Path:
    """A directory of links to what this environment has installed, but kumitate and the packaging tools.

    On an environment's path it makes kumitate's dependencies (and its extras') found installed, so kumitate
    alone is installed there, from the wheel or this repository: resolving and installing the ~100 others is
    `make test-package`'s job (tests/scaffold/test_package.py). It holds no kumitate nor codegen, and no .pth
    file (this environment's editable install of this repository is one). bin/ holds the wheels' binaries
    (ruff's package looks for its binary there, beside its parent)."""
    target.mkdir()
    (target / "bin").symlink_to(sysconfig.get_paths()["scripts"])
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(PACKAGING) and entry.suffix != ".pth":
            (target / entry.name).symlink_to(entry)
    return target


def wheel_venv(wheel: Path, root: Path) -> Path:
    """The bin/ of a fresh venv (no pip) with the wheel installed and nothing else: its dependencies are
    `installed_dependencies`, on its path after its own site-packages (a .pth file)."""
    venv = root / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root)
    site = next(venv.glob("lib/python3.*/site-packages"))
    (site / "dependencies.pth").write_text(f"{installed_dependencies(root / 'dependencies')}\n")
    install = ["-m", "pip", "--python", str(venv / "bin/python"), "install", "-q", "--no-deps", str(wheel)]
    run([sys.executable, *install], root)
    return venv / "bin"


def serves_the_readme_greeting(command: list[str], project: Path, log: Path) -> None:
    """`command` (`make serve PORT=…`, `kumitate serve --port …`) serves the project's README example: the
    request and the answer its curl shows."""
    port = free_port()
    readme = (project / "README.md").read_text()
    assert "/v1/hello/greet" in readme and '{"name": "kumitate"}' in readme
    assert '{"message":"Hello, kumitate!"}' in readme
    server = subprocess.Popen(
        [part.format(port=port) for part in command],
        cwd=project,
        env=ENV | {"KUMITATE_DRAIN_DELAY_S": "0"},  # no balancer to wait for on SIGTERM (5 s by default)
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                response = httpx.post(f"http://127.0.0.1:{port}/v1/hello/greet", json={"name": "kumitate"}, timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.3)
        assert response.status_code == 200
        assert response.json() == {"message": "Hello, kumitate!"}
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
