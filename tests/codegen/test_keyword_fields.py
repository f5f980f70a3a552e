"""A spec field named like a Python keyword (`from`) is `from_` in the generated model, and handlers can
write `Model(from_=...)`; the JSON name stays the only one on the wire and in what the model dumps."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from tests.codegen.support import GOLDEN, copy_meta, run_codegen


def test_a_keyword_field_is_usable_by_its_python_name(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(GOLDEN / "minimal_tool" / "specs", specs)
    copy_meta(specs)
    tool = specs / "mini/tools/ping.yaml"
    doc = yaml.safe_load(tool.read_text())
    doc["input"] |= {"required": ["from"], "properties": {"from": {"type": "string", "description": "Sender."}}}
    doc["output"]["required"].append("from")
    doc["output"]["properties"]["from"] = {"type": "string"}
    doc["examples"] = [{"name": "pong", "input": {"from": "a"}, "output": {"pong": True, "from": "a"}}]
    tool.write_text(yaml.safe_dump(doc, sort_keys=False))
    done = run_codegen("--specs", specs, "--out", tmp_path)
    assert done.returncode == 0, done.stderr

    path = tmp_path / "generated/mini/models.py"
    spec = importlib.util.spec_from_file_location("keyword_field_models", path)
    assert spec is not None and spec.loader is not None
    models = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = models  # its annotations are strings, resolved in its module
    try:
        spec.loader.exec_module(models)
        check(models, path)
    finally:
        del sys.modules[spec.name]


def check(models: Any, path: Path) -> None:

    assert models.PingOutput(pong=True, from_="a").model_dump(mode="json", by_alias=True) == {"pong": True, "from": "a"}
    assert models.PingInput(from_="x").from_ == "x"
    assert models.PingInput.model_validate({"from": "x"}, by_name=False).from_ == "x"
    with pytest.raises(ValidationError):  # the wire (kumitate.intake validates by_name=False) knows only `from`
        models.PingInput.model_validate({"from_": "x"}, by_name=False)
    assert path.read_text().count("populate_by_name=True") == 2  # only the classes with a renamed field
