"""Every golden case's generated package type-checks under `mypy --strict` and runs against a stub handler.

The golden test compares text; this one proves the text is a working, typed contract: a stub
`handlers/<svc>` written from the spec (each method typed exactly as its protocol says, returning
the output model) passes mypy --strict together with the generated package, and importing every
generated module, building the handlers through `bindings.SERVICE` and calling each tool through
the real intake (spec examples where there are some) gives the output model.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen import emit, specs
from tests.codegen.support import GOLDEN, REPO
from tests.codegen.test_golden import CASES, render_case

pytestmark = pytest.mark.slow

RUN = """
import asyncio, importlib, inspect, sys
from pathlib import Path
from pydantic import BaseModel
from kumitate.context import CallContext
from kumitate.intake import Intake
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

svc, examples = sys.argv[1], eval(sys.argv[2])
for name in ("models", "protocols", "bindings", "mcp", "http", "client"):
    importlib.import_module(f"generated.{svc}.{name}")
importlib.import_module("generated.registry")
bindings = importlib.import_module(f"generated.{svc}.bindings")
assert bindings.__file__.startswith(str(Path.cwd())), bindings.__file__
settings = Settings(data_dir=Path.cwd() / "var", sample_dir=Path.cwd(), public_base_url="http://x")
handlers = bindings.SERVICE.create_handlers(ServiceSetup.open(svc, settings))
intake, calls = Intake(), 0
for tool in bindings.SERVICE.tools:
    for arguments in examples.get(tool.name) or [None]:
        value = tool.input_model.model_construct() if arguments is None else intake.prepare(tool, arguments)
        ctx = CallContext(service=svc, tool=tool.name, transport="test", run_id="r", trace_id="t")
        result = getattr(handlers, tool.name)(value, ctx)
        result = asyncio.run(result) if inspect.isawaitable(result) else result
        assert isinstance(result, BaseModel), (tool.name, result)
        calls += 1
for res in bindings.SERVICE.resources:
    ctx = CallContext(service=svc, tool=res.name, transport="test", run_id="r", trace_id="t")
    getattr(handlers, f"read_{res.name}")(ctx, **{p: "x" for p in res.params})
    calls += 1
print("calls", calls)
"""


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


@pytest.mark.parametrize("case", CASES)
def test_golden_case_is_typed_and_runs(case: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
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
        run = subprocess.run(
            [sys.executable, "-c", RUN, svc.name, repr(examples)],
            cwd=tmp_path,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        expected = sum(len(e) or 1 for e in examples.values()) + len(svc.resources)
        assert f"calls {expected}" in run.stdout
