"""Every golden case's generated package type-checks under `mypy --strict` and runs against a stub handler.

The golden test compares text; this one proves the text is a working, typed contract: a stub
`handlers/<svc>` written from the spec (each method typed exactly as its protocol says, returning
the output model) passes mypy --strict together with the generated package, and importing every
generated module, building the handlers through `bindings.SERVICE` and calling each tool through
the real intake (spec examples where there are some) gives the output model (golden_runner.py: one
process imports the runtime once and forks a child per service).

The cases share one mypy cache (the first case analyses the runtime and its libraries, the others
reuse it). The mypy daemon was tried: after a case's files were swapped in it passed a stub with a
type error plain mypy reports, so each case keeps its own `mypy` run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegen import emit, specs
from tests.codegen.support import GOLDEN, REPO
from tests.codegen.test_golden import CASES, render_case

pytestmark = pytest.mark.slow


def _stub(svc: specs.ServiceSpec) -> str:
    """handlers/<svc>/__init__.py: every method typed as the protocol says, returning its output type."""
    lines = [
        "from typing import Any",
        "",
        "from generated.{0} import models",
        "from generated.{0}.protocols import {1}",
        "from kumitate.context import CallContext",
        "from kumitate.service import ServiceSetup",
        "",
        "",
        "class Stub:",
        "    def _unused(self) -> None: ...",
    ]
    for tool in sorted(svc.tools, key=lambda t: t.name):
        t = emit._tool_ctx(tool)
        kind = "dict[str, Any]" if t["handler_input"] == "data" else f"models.{t['input_model']}"
        out = f"models.{t['output_model']}"
        lines += [
            f"    def {t['name']}(self, input: {kind}, ctx: CallContext, /) -> {out}:",
            f"        return {out}.model_construct()",
        ]
    for res in sorted(svc.resources, key=lambda r: r.name):
        r = emit._resource_ctx(res)
        params = "".join(f", {p}: str" for p in r["params"])
        returns = r["client_returns"]
        body = "b''" if returns == "bytes" else "{}" if returns.startswith("dict") else f"{returns}.model_construct()"
        lines += [f"    def {r['method']}(self, ctx: CallContext, /{params}) -> {returns}:", f"        return {body}"]
    lines += ["", "", "def create(setup: ServiceSetup) -> {1}:", "    return Stub()", ""]
    return "\n".join(lines).replace("{0}", svc.name).replace("{1}", f"{emit.naming.bundle_name(svc.name)}")


def _write_case(case: str, tmp_path: Path) -> specs.SpecTree:
    out = render_case(case, tmp_path / "render")
    for rel, text in out.items():
        if rel.startswith("generated/"):
            target = tmp_path / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    tree = specs.load(tmp_path / "render" / "specs")
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "__init__.py").write_text("", encoding="utf-8")
    for svc in tree.services:
        (tmp_path / "handlers" / svc.name).mkdir()
        (tmp_path / "handlers" / svc.name / "__init__.py").write_text(_stub(svc), encoding="utf-8")
    return tree


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO}", "MYPYPATH": f"{tmp_path}{os.pathsep}{REPO}"}


class Runner:
    """The golden_runner process: `call` runs one service of a case in a fresh fork."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process, self.stdin, self.stdout = process, process.stdin, process.stdout

    def call(self, case_dir: Path, service: str, examples: dict[str, list[Any]]) -> dict[str, Any]:
        self.stdin.write(json.dumps({"dir": str(case_dir), "service": service, "examples": examples}) + "\n")
        self.stdin.flush()
        line = self.stdout.readline()
        assert line, f"the golden runner ended (status {self.process.wait()})"
        answer: dict[str, Any] = json.loads(line)
        return answer


@pytest.fixture(scope="module")
def runner() -> Iterator[Runner]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.codegen.golden_runner"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    runner = Runner(process)
    try:
        yield runner
    finally:
        runner.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize("case", CASES)
def test_golden_case_is_typed_and_runs(
    case: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, runner: Runner
) -> None:
    assert (GOLDEN / case / "expected").is_dir()
    tree = _write_case(case, tmp_path)
    cache = tmp_path_factory.getbasetemp() / "mypy-cache"
    argv = ["--strict", "--follow-imports=silent", "--cache-dir", str(cache), "-p", "generated", "-p", "handlers"]
    mypy = subprocess.run(
        [sys.executable, "-m", "mypy", *argv],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert mypy.returncode == 0, mypy.stdout + mypy.stderr
    for svc in tree.services:
        examples = {t.name: [ex.input for ex in t.examples if ex.error is None] for t in svc.tools}
        run = runner.call(tmp_path, svc.name, examples)
        assert run["status"] == 0, run["output"]
        expected = sum(len(e) or 1 for e in examples.values()) + len(svc.resources)
        assert f"calls {expected}" in run["output"]
