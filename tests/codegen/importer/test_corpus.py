"""Every document of the OpenAPI corpus (tests/data/openapi-corpus/index.yaml) imports, and the project's
spec lint passes on what it wrote (with the report saying what was not carried)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from codegen import docs, lint, specs
from codegen.importer import Options, import_openapi
from codegen.importer.report import REPORT_FILE
from tests.conftest import REPO

CORPUS = REPO / "tests/data/openapi-corpus"
INDEX = yaml.safe_load((CORPUS / "index.yaml").read_text(encoding="utf-8")) if CORPUS.is_dir() else []
ENTRIES: list[dict[str, str]] = INDEX["documents"] if isinstance(INDEX, dict) else INDEX

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["slug"] for e in ENTRIES])
def test_a_corpus_document_imports_and_lints(project: Path, entry: dict[str, str]) -> None:
    service = entry["slug"].replace("-", "_")[:32]
    source = CORPUS / entry["slug"] / entry["entry"]
    done = import_openapi(Options(str(source), service), project / "specs", project / "handlers")
    assert done.report is not None and done.report.operations
    tree = specs.load(project / "specs")
    problems = [*lint.lint(tree), *docs.check_budget(tree)]
    assert not problems, "\n".join(map(str, problems[:20]))
    assert (project / "specs" / service / REPORT_FILE).is_file()
