"""A client generated from the served OpenAPI document by a generator nobody here wrote keeps every
operation and response, and talks to the server (issue 46).

openapi-python-client is strict where the document is loose: a `$ref` into another schema's property
(`ErrorBody/properties/error`) made it drop the `Operation` schema, and with it the 202 of every tool
that may run as a task. The client is generated from what /schema/openapi.json serves, imported, and
one operation per service is called through it against an in-process server, each with a spec example
whose answer the generated models read back; a task tool is started with `Prefer: respond-async` (202)
and its operation polled through the generated operations API until it is done.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codegen import naming, specs
from codegen.examples import Result, check
from tests.conftest import InProcessApp

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

PACKAGE = "kumitate_openapi_client"
KNOWN_WARNINGS = {
    "GET /api/charts/{chart_id}": "an image/png response: the generator reads only JSON and octet-stream bodies",
}
"""Generator warnings that are its limits, not the document's: the operation is kept, that body is bytes."""


@pytest.fixture(scope="module")
async def generated(in_process_app: InProcessApp, tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, str]:
    """The client package generated from the served document, imported; and the generator's output."""
    served = await in_process_app.http.get("/schema/openapi.json")
    assert served.status_code == 200
    root = tmp_path_factory.mktemp("openapi-client")
    document = root / "openapi.json"
    document.write_bytes(served.content)
    config = root / "config.yaml"
    config.write_text("post_hooks: []\n", encoding="utf-8")  # no ruff run over the output: not what is tested
    command = [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(document)]
    command += ["--output-path", str(root / PACKAGE), "--meta", "none", "--config", str(config)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(PACKAGE), output
    finally:
        sys.path.remove(str(root))


def _module(package: ModuleType, operation: dict[str, Any]) -> ModuleType:
    """The generated module of an operation: api/<its tag>/<its operationId in snake case>."""
    tag, op_id = operation["tags"][0], operation["operationId"].replace(".", "_")
    return importlib.import_module(f"{package.__name__}.api.{tag}.{op_id}")


async def test_every_operation_and_response_is_generated(
    generated: tuple[ModuleType, str], in_process_app: InProcessApp
) -> None:
    package, output = generated
    document = (await in_process_app.http.get("/schema/openapi.json")).json()
    warned = {line.removeprefix("WARNING parsing ").split(" within ")[0] for line in output.splitlines()}
    warned = {w for w in warned if w.startswith(("GET ", "POST "))}
    assert warned == set(KNOWN_WARNINGS), output[-3000:]
    tasks = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            module = _module(package, operation)  # every operation is there
            source = Path(module.__file__ or "").read_text(encoding="utf-8")
            if f"{method.upper()} {path}" in KNOWN_WARNINGS:
                continue
            for status in operation["responses"]:
                # each response the document declares is parsed by the client, the 202 of a task included
                assert f"response.status_code == {status}" in source, (operation["operationId"], status)
            tasks += "202" in operation["responses"]
    assert tasks >= 4  # export, materialize, import_household_data, ingest


async def test_one_operation_per_service_answers_through_the_generated_client(
    generated: tuple[ModuleType, str], in_process_app: InProcessApp, spec_tree: specs.SpecTree
) -> None:
    package, _ = generated
    client = package.Client(base_url=in_process_app.url)
    client.set_async_httpx_client(in_process_app.http)
    models = importlib.import_module(f"{package.__name__}.models")
    document = (await in_process_app.http.get("/schema/openapi.json")).json()
    called = set()
    for tool in spec_tree.default_tools():
        examples = [ex for ex in tool.examples if ex.error is None and ex.output is not None]
        if tool.service in called or not examples or tool.is_task:
            continue
        operation = document["paths"][tool.http_path][tool.http_method.lower()]
        body = getattr(models, naming.input_model(tool.name)).from_dict(examples[0].input)
        answer = await _module(package, operation).asyncio_detailed(client=client, body=body)
        assert answer.status_code == 200, (tool.name, answer.content[:300])
        assert isinstance(answer.parsed, getattr(models, naming.output_model(tool.name))), tool.name
        # the generated model reads the whole answer back: the example's fields are there, as the spec says
        assert check(examples[0], Result(True, answer.parsed.to_dict())) is None, tool.name
        called.add(tool.service)
    assert called == {svc.name for svc in spec_tree.services if not svc.opt_in}


async def test_a_task_starts_with_202_and_its_operation_is_read_through_the_generated_client(
    generated: tuple[ModuleType, str], in_process_app: InProcessApp, spec_tree: specs.SpecTree
) -> None:
    package, _ = generated
    client = package.Client(base_url=in_process_app.url)
    client.set_async_httpx_client(in_process_app.http)
    models = importlib.import_module(f"{package.__name__}.models")
    tool = next(t for t in spec_tree.default_tools() if t.service == "analytics" and t.name == "export")
    example = next(ex for ex in tool.examples if ex.error is None)
    export = importlib.import_module(f"{package.__name__}.api.analytics.analytics_export")
    body = models.ExportInput.from_dict(example.input)
    started = await export.asyncio_detailed(client=client, body=body, prefer="respond-async")
    assert started.status_code == 202, started.content[:300]
    assert isinstance(started.parsed, models.Operation)
    assert started.headers["Location"] == f"/v1/{started.parsed.name}"
    get_operation = importlib.import_module(f"{package.__name__}.api.operations.get_operation")
    operation_id = started.parsed.name.removeprefix("operations/")
    for _ in range(600):  # the export takes well under a second; 60 s of patience for a loaded machine
        polled = await get_operation.asyncio_detailed(operation_id, client=client)
        assert polled.status_code == 200 and isinstance(polled.parsed, models.Operation)
        if polled.parsed.done:
            break
        await asyncio.sleep(0.1)
    assert polled.parsed.done, json.loads(polled.content)
    result = polled.parsed.to_dict()
    assert result["metadata"]["status"] == "completed", result
    assert check(example, Result(True, result["response"])) is None
