"""The site's home page, index.md, written at build time (mkdocs-gen-files) from README.md.

The README is the one quick start, read on GitHub and on the site alike. Its links are written from
the repository root (`docs/deployment.md`); the home page sits inside docs/, so a link into docs/
loses its `docs/` prefix here. Nothing else is changed, and nothing is committed.
"""

from __future__ import annotations

import re
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
DOCS_LINK = re.compile(r"\]\(docs/")


def home_page(readme: str) -> str:
    """The README's Markdown with every `](docs/...)` link made relative to docs/."""
    return DOCS_LINK.sub("](", readme)


with mkdocs_gen_files.open("index.md", "w") as _page:
    _page.write(home_page((ROOT / "README.md").read_text(encoding="utf-8")))
