"""The API reference pages, written at build time (mkdocs-gen-files) for mkdocstrings to fill.

A module is documented when it declares `__all__` (the declaration is the promise), as the reference
always has been: one page per module, `api/<dotted.name>.md`, holding only `::: dotted.name` (the
`filters: public` option in mkdocs.yml then shows exactly the names of its `__all__`), and
`api/SUMMARY.md`, the section's navigation (mkdocs-literate-nav). Nothing is committed, so a module
that is added, moved or given an `__all__` is in the next `make docs` with nothing to regenerate.
Which modules are public is codegen.docstrings' rule (no `_`-prefixed part in the path, no `__main__`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import mkdocs_gen_files

from codegen.docstrings import public_modules

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "kumitate"


def declares_all(path: Path) -> bool:
    """Whether the module at `path` assigns `__all__` at its top level (read with `ast`, not imported)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(
        isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        for node in tree.body
    )


def api_modules(root: Path) -> list[str]:
    """The dotted names of the public modules of kumitate under `root` that declare `__all__`, sorted."""
    return sorted(name for name, path in public_modules(root, [PACKAGE]) if declares_all(path))


def pages(modules: list[str]) -> dict[str, str]:
    """Path under docs/ -> Markdown: one page per module, then the section's SUMMARY.md."""
    written = {f"api/{name}.md": f"# `{name}`\n\n::: {name}\n" for name in modules}
    nav = ["* [Overview](index.md)", *(f"* [`{name}`]({name}.md)" for name in modules)]
    written["api/SUMMARY.md"] = "\n".join(nav) + "\n"
    return written


for _path, _text in pages(api_modules(ROOT)).items():
    with mkdocs_gen_files.open(_path, "w") as _page:
        _page.write(_text)
