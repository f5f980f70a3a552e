"""The drift check: `python -m codegen --check` against a generated tree in a temp directory."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.codegen.support import BASE, GOLDEN, make_tree, run_codegen

CASE = GOLDEN / "minimal_tool"


def _files(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
        for d in ("generated", "docs/reference")
        for p in sorted((out / d).rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_generate_check_stale_orphan_regenerate(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path, CASE / "specs")
    out = tmp_path / "out"

    gen = run_codegen("--specs", specs_dir, "--out", out)
    assert gen.returncode == 0, gen.stderr
    written = _files(out)
    # the CLI writes exactly what the golden test expects from render_all
    expected_root = CASE / "expected"
    assert written == {
        p.relative_to(expected_root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(expected_root.rglob("*"))
        if p.is_file()
    }

    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "up to date" in check.stdout

    models = out / "generated" / "mini" / "models.py"
    models.write_text(models.read_text(encoding="utf-8") + "\n# hand edit\n", encoding="utf-8")
    orphan = out / "generated" / "mini" / "orphan.py"
    orphan.write_text("x = 1\n", encoding="utf-8")
    (out / "generated" / "errors.py").unlink()
    pycache = out / "generated" / "mini" / "__pycache__"
    pycache.mkdir()
    (pycache / "models.cpython-311.pyc").write_bytes(b"\0")  # bytecode is never an orphan

    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 1
    lines = check.stdout.splitlines()
    assert "stale: generated/mini/models.py" in lines
    assert "stale: generated/errors.py" in lines
    assert "orphan: generated/mini/orphan.py" in lines
    assert not any("__pycache__" in line for line in lines)
    assert sum(line.startswith(("stale: ", "orphan: ")) for line in lines) == 3
    # what drifted, as a unified diff: the hand edit is shown as a line to remove, the lost file as new
    assert "--- a/generated/mini/models.py" in lines and "+++ b/generated/mini/models.py" in lines
    assert "-# hand edit" in lines
    assert "--- /dev/null" in lines and "+++ b/generated/errors.py" in lines
    # --check writes nothing
    assert models.read_text(encoding="utf-8").endswith("# hand edit\n") and orphan.exists()
    assert not (out / "generated" / "errors.py").exists()

    gen = run_codegen("--specs", specs_dir, "--out", out)
    assert gen.returncode == 0, gen.stderr
    assert "(2 written, 1 removed)" in gen.stdout
    assert not orphan.exists()
    assert _files(out) == written

    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 0, check.stdout + check.stderr


def test_spec_change_makes_the_output_stale(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path, BASE)
    out = tmp_path / "out"
    assert run_codegen("--specs", specs_dir, "--out", out).returncode == 0
    echo = specs_dir / "demo" / "tools" / "echo.yaml"
    echo.write_text(echo.read_text(encoding="utf-8").replace("maxLength: 100", "maxLength: 200"), encoding="utf-8")
    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 1
    stale = {line.removeprefix("stale: ") for line in check.stdout.splitlines() if line.startswith("stale: ")}
    # the schema change reaches the models, the schemas and the OpenAPI document
    assert {"generated/demo/models.py", "generated/demo/schemas.json", "generated/openapi.json"} <= stale


def test_generate_refuses_a_tree_with_problems(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path, BASE)
    shutil.rmtree(specs_dir / "demo" / "types")  # greet's $ref now dangles
    out = tmp_path / "out"
    proc = run_codegen("--specs", specs_dir, "--out", out)
    assert proc.returncode == 1
    assert "[KT002]" in proc.stderr and "nothing generated" in proc.stderr
    assert not (out / "generated").exists()


def test_check_fails_when_a_service_is_over_its_token_budget(tmp_path: Path) -> None:
    specs_dir = make_tree(tmp_path, CASE / "specs")
    (specs_dir / "token-budget.yaml").write_text("default: 50\n", encoding="utf-8")
    out = tmp_path / "out"
    gen = run_codegen("--specs", specs_dir, "--out", out)
    assert gen.returncode == 0 and "warning: " in gen.stderr and "[KT205]" in gen.stderr
    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 1
    assert "over the budget of 50" in check.stderr and "[KT205]" in check.stderr
    assert not any(line.startswith(("stale: ", "orphan: ")) for line in check.stdout.splitlines())
    assert "over their tools/list token budget" in check.stdout
    # a reasoned readiness-baseline entry accepts it
    (specs_dir / "readiness-baseline.yaml").write_text(
        "- {rule: KT205, file: specs/mini/service.yaml, pointer: '', reason: a test of the baseline}\n",
        encoding="utf-8",
    )
    check = run_codegen("--check", "--specs", specs_dir, "--out", out)
    assert check.returncode == 0, check.stdout + check.stderr
