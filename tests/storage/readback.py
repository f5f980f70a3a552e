"""A data dir of the previous storage layout (tests/fixtures/upgrade/e7d948a), and the read answers a runtime
gives on a data dir (tests/fixtures/upgrade/reads.py), for the upgrade and backup tests."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from generated.registry import SERVICES
from kumitate.pipeline import CallRequest
from kumitate.runtime import Runtime
from kumitate.settings import Settings

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "upgrade"
sys.path.insert(0, str(FIXTURE))
import reads  # noqa: E402

MADE: dict[str, Any] = json.loads((FIXTURE / "made.json").read_text(encoding="utf-8"))
RECORDED: dict[str, Any] = json.loads((FIXTURE / "answers.json").read_text(encoding="utf-8"))


def old_data_dir(target: Path) -> Path:
    """The recorded data dir of release e7d948a, its handles made live again (recorded with a 1 h TTL)."""
    shutil.copytree(FIXTURE / "e7d948a", target)
    for packed in target.rglob("*.gz"):
        packed.with_suffix("").write_bytes(gzip.decompress(packed.read_bytes()))
        packed.unlink()
    later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    for descriptor in (target / "analytics" / "exports").glob("*.json"):
        meta = json.loads(descriptor.read_text(encoding="utf-8"))
        descriptor.write_text(json.dumps({**meta, "expires_at": later}), encoding="utf-8")
    for chart in (target / "household" / "charts").glob("*.png"):
        os.utime(chart)
    return target


def settings(data_dir: Path) -> Settings:
    return Settings.from_env({"KUMITATE_DATA_DIR": str(data_dir), "KUMITATE_ANALYTICS_SCALE": "0.02"})


async def answers(runtime: Runtime) -> dict[str, Any]:
    request = CallRequest(transport="cli", local=True)

    async def call(service: str, tool: str, args: dict[str, Any]) -> Any:
        binding = next(t for t in SERVICES[service].tools if t.name == tool)
        out = await runtime.pipeline.call_tool(binding, args, request)
        assert out.ok, (tool, out.body)
        return out.body

    async def read(service: str, name: str, params: dict[str, str]) -> Any:
        binding = next(r for r in SERVICES[service].resources if r.name == name)
        out = await runtime.pipeline.read_resource(binding, params, request)
        assert out.ok, (name, out.body)
        return getattr(out.body, "data", out.body)

    return await reads.answers(call, read, **MADE)
