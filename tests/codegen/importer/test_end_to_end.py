"""`kumitate init`, then `kumitate import openapi` (stubs and a facade), then the project's own generator
drift check and lint: what a team runs after importing its API."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from codegen.__main__ import main as codegen_main
from kumitate import cli
from tests.codegen.importer.conftest import DATA


def kumitate(project: Path, *argv: str) -> tuple[int, str]:
    """`kumitate <argv>` in `project`, in this process; (exit status, stdout and stderr)."""
    out = io.StringIO()
    saved = os.environ.pop("KUMITATE_PROJECT", None)
    try:
        with contextlib.chdir(project), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = cli.main(list(argv))
    finally:
        if saved is not None:
            os.environ["KUMITATE_PROJECT"] = saved
    return status, out.getvalue()


def test_an_imported_api_passes_the_projects_generator_and_lint(tmp_path: Path) -> None:
    status, said = kumitate(tmp_path, "init", str(tmp_path / "my_api"))
    assert status == 0, said
    project = tmp_path / "my_api"
    status, said = kumitate(project, "import", "openapi", str(DATA / "petstore30/openapi.yaml"), "--service", "pets")
    assert status == 0, said
    assert "imported 6 operation(s) of Pet Store (OpenAPI 3.0.3) as service 'pets'" in said
    assert "details: specs/pets/IMPORT-REPORT.md" in said
    forward = ("--forward", "https://library.example.org/api", "--base-path", "/library")
    status, said = kumitate(
        project, "import", "openapi", str(DATA / "library31.json"), "--service", "library", *forward
    )
    assert status == 0, said
    assert (project / "generated/pets/models.py").is_file() and (project / "generated/library/bindings.py").is_file()
    with contextlib.chdir(project), contextlib.redirect_stdout(io.StringIO()) as out:
        assert codegen_main(["--lint"]) == 0, out.getvalue()
        assert codegen_main(["--check"]) == 0, out.getvalue()
    status, said = kumitate(project, "import", "openapi", str(DATA / "remote.yaml"), "--service", "remote")
    assert status == 2 and said.startswith("kumitate import openapi: ") and "remote $ref" in said
