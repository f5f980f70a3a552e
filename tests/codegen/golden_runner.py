"""Calls every tool of a golden case's generated package through the real intake, against its stub handlers.

Run as `python -m tests.codegen.golden_runner`: the process imports the runtime (kumitate, pydantic, fastmcp,
litestar: seconds on a loaded host) once, then reads one JSON request a line, `{"dir", "service",
"examples"}`, and forks a child per request that imports `generated.<service>` and `handlers.<service>` from
`dir` (neither package is imported before the fork, so each child sees only its own case) and prints
`calls N`. The parent answers each request with one JSON line, `{"status", "output"}` (the child's wait
status and its stdout and stderr).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import signal
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from kumitate.context import CallContext
from kumitate.intake import Intake
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

CHILD_TIMEOUT_S = 120
PRELOAD = ("kumitate.runtime", "kumitate.transports.http", "kumitate.transports.mcp", "kumitate.client")
"""What the generated packages import (fastmcp, litestar, httpx with them): loaded once, before the forks."""


def run(svc: str, examples: dict[str, list[Any]]) -> None:
    """Import every generated module of `svc`, build its handlers through `bindings.SERVICE`, call each tool
    (each spec example, else an empty input) and each resource; print how many calls answered."""
    for name in ("models", "protocols", "bindings", "mcp", "http", "client"):
        importlib.import_module(f"generated.{svc}.{name}")
    importlib.import_module("generated.registry")
    bindings = importlib.import_module(f"generated.{svc}.bindings")
    assert (bindings.__file__ or "").startswith(str(Path.cwd())), bindings.__file__
    settings = Settings(data_dir=Path.cwd() / "var", sample_dir=Path.cwd(), public_base_url="http://x")
    handlers = bindings.SERVICE.create_handlers(ServiceSetup.open(svc, settings))
    intake, calls = Intake(), 0
    for tool in bindings.SERVICE.tools:
        for arguments in examples.get(tool.name) or [None]:
            value = tool.input_model.model_construct() if arguments is None else intake.prepare(tool, arguments)
            ctx = CallContext(service=svc, tool=tool.name, transport="test", run_id="r", trace_id="t")
            result = getattr(handlers, tool.name)(value, ctx)
            result = asyncio.run(result) if inspect.iscoroutine(result) else result
            assert isinstance(result, BaseModel), (tool.name, result)
            calls += 1
    for res in bindings.SERVICE.resources:
        ctx = CallContext(service=svc, tool=res.name, transport="test", run_id="r", trace_id="t")
        getattr(handlers, f"read_{res.name}")(ctx, **{p: "x" for p in res.params})
        calls += 1
    print("calls", calls)


def _child(request: dict[str, Any], output: int) -> None:
    """In the forked child: the case's directory first on the path and as the cwd, output to `output`."""
    os.dup2(output, 1)
    os.dup2(output, 2)
    signal.alarm(CHILD_TIMEOUT_S)
    status = 0
    try:
        os.chdir(request["dir"])
        sys.path.insert(0, request["dir"])
        run(request["service"], request["examples"])
    except BaseException:
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def main() -> None:
    for module in PRELOAD:
        importlib.import_module(module)
    assert not {m.split(".")[0] for m in sys.modules} & {"generated", "handlers"}, "imported before a fork"
    for line in sys.stdin:
        request = json.loads(line)
        with tempfile.TemporaryFile() as output:
            pid = os.fork()
            if pid == 0:
                _child(request, output.fileno())
            _, status = os.waitpid(pid, 0)
            output.seek(0)
            text = output.read().decode(errors="replace")
        print(json.dumps({"status": status, "output": text}), flush=True)


if __name__ == "__main__":
    main()
