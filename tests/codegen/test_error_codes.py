"""Error codes are one typed vocabulary: generated/error_codes.py is the catalogue's codes as a Literal,
and mypy (`make check`) rejects a misspelt code wherever the runtime or a handler writes one."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from mypy import api

from generated.error_codes import ErrorCode
from generated.errors import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """\
from kumitate.errors import ToolError


def check(exc: ToolError) -> None:
    if exc.code == "RATE_LIMITED" or exc.code == "RATE_LIMTED":
        raise ToolError("slow down", code="RATE_LIMITED")
    raise ToolError("slow down", code="RATE_LIMTED")


class Misspelt(ToolError):
    code = "NOT_FUOND"
"""


def test_the_type_is_the_catalogue() -> None:
    assert sorted(get_args(ErrorCode)) == sorted(CATALOGUE)


def test_mypy_rejects_a_misspelt_code(tmp_path: Path) -> None:
    """With the project's mypy configuration and cache (what `make types` warmed; a cache of its own took
    ~25 s to type-check the libraries kumitate imports): a misspelt code in a comparison, a ToolError and a
    subclass fails; the right spelling next to each passes."""
    source = tmp_path / "codes_snippet.py"
    source.write_text(SNIPPET, encoding="utf-8")
    out, err, status = api.run(
        ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache"), str(source)]
    )
    assert status == 1, out + err
    flagged = {int(line) for line in re.findall(r"codes_snippet\.py:(\d+): error", out)}
    assert flagged == {5, 7, 11}, out
