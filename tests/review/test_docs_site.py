"""The docs site's build scripts (docs/gen/, run by mkdocs-gen-files in `make docs`): which modules get an
API reference page, and the README as the home page. `make docs` (CI's lint stage) builds the whole site
with --strict; these check what the pages say without a build."""

from __future__ import annotations

import io
import runpy
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO


def _run(script: str, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, str], dict[str, Any]]:
    """Run a docs/gen script as mkdocs-gen-files does (runpy), its `open` writing into a dict instead."""
    written: dict[str, str] = {}

    @contextmanager
    def fake_open(path: str, mode: str = "r") -> Iterator[io.StringIO]:
        assert mode == "w"
        buffer = io.StringIO()
        yield buffer
        written[path] = buffer.getvalue()

    monkeypatch.setitem(sys.modules, "mkdocs_gen_files", types.SimpleNamespace(open=fake_open))
    namespace = runpy.run_path(str(REPO / "docs" / "gen" / script))
    return written, namespace


def test_each_module_that_declares_all_gets_a_page_for_mkdocstrings_and_a_nav_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    written, _ = _run("api_pages.py", monkeypatch)
    assert written["api/kumitate.context.md"] == "# `kumitate.context`\n\n::: kumitate.context\n"
    assert {"api/kumitate.md", "api/kumitate.storage.md", "api/kumitate.storage.engine.md"} <= set(written)
    assert "api/kumitate.__main__.md" not in written
    modules = [path.removeprefix("api/").removesuffix(".md") for path in written if path != "api/SUMMARY.md"]
    nav = written["api/SUMMARY.md"].splitlines()
    assert nav == ["* [Overview](index.md)", *(f"* [`{name}`]({name}.md)" for name in sorted(modules))]


def test_the_rule_is_a_top_level_all_in_a_public_module(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, namespace = _run("api_pages.py", monkeypatch)
    pkg = tmp_path / "kumitate"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""The package."""\n__all__ = ["x"]\n')
    (pkg / "declared.py").write_text('__all__ = ["f"]\n')
    (pkg / "undeclared.py").write_text("def f() -> None:\n    __all__ = ['g']\n")
    (pkg / "_private.py").write_text('__all__ = ["h"]\n')
    (pkg / "__main__.py").write_text('__all__ = ["main"]\n')
    (pkg / "sub" / "__init__.py").write_text('"""No __all__ here."""\n')
    (pkg / "sub" / "leaf.py").write_text('__all__ = ["leaf"]\n')
    assert namespace["api_modules"](tmp_path) == ["kumitate", "kumitate.declared", "kumitate.sub.leaf"]


def test_the_home_page_is_the_readme_with_its_links_into_docs_made_relative(monkeypatch: pytest.MonkeyPatch) -> None:
    written, namespace = _run("home_page.py", monkeypatch)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert set(written) == {"index.md"}
    assert written["index.md"] == namespace["home_page"](readme)
    page = namespace["home_page"]("see [the toolsets](docs/reference/toolsets.md), [a](#a), `docs/x.md`")
    assert page == "see [the toolsets](reference/toolsets.md), [a](#a), `docs/x.md`"
