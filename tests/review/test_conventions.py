"""Conventions a newcomer meets first: `make help`, `kumitate --version`, help on every option, one version."""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

import kumitate
from kumitate import cli
from tests.conftest import seeded_copy
from tests.review.support import REPO

VERSION = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self.parser = parser


def _parser(monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser `kumitate` builds, caught when it is about to parse."""

    def catch(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        raise _Parsed(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", catch)
    with pytest.raises(_Parsed) as caught:
        cli.main([])
    return caught.value.parser


def test_every_option_of_every_command_has_help(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = _parser(monkeypatch)
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = []
    for name, sub in [("kumitate", parser), *subs.choices.items()]:
        for action in sub._actions:
            if not isinstance(action, argparse._HelpAction) and not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert missing == []
    assert {"serve", "mcp", "diff"} <= set(subs.choices)


def test_version_is_the_pyproject_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert kumitate.__version__ == VERSION
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"kumitate {VERSION}"
    openapi = (REPO / "generated" / "openapi.json").read_text(encoding="utf-8")
    assert f'"version": "{VERSION}"' in openapi


def test_the_mcp_server_reports_kumitates_version(tmp_path: Path, seeded_data_dir: Path) -> None:
    from fastmcp import Client

    from kumitate.runtime import Runtime
    from kumitate.settings import Settings
    from kumitate.transports.mcp import build_server

    data_dir = seeded_copy(seeded_data_dir, tmp_path / "var")  # no first start's imports to wait for

    async def served() -> Any:
        runtime = Runtime(
            Settings(data_dir=data_dir, sample_dir=REPO / "data", public_base_url="http://127.0.0.1:8000")
        )
        try:
            async with Client(build_server(runtime)) as client:
                return client.server_info
        finally:
            runtime.close()

    info = asyncio.run(served())
    assert (info.name, info.version) == ("kumitate", VERSION)


def test_make_help_lists_every_target() -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    out = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.MULTILINE)
    assert phony is not None
    listed = set(re.findall(r"^  make (\S+)", out, re.MULTILINE))
    assert listed == set(phony.group(1).split())
    assert {"fmt", "help", "review"} <= listed
