"""The handler class with pydantic models generated from the spec, as the runtime will call it."""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from datamodel_code_generator import DataModelType, InputFileType, LiteralType, PythonVersion, generate
from datamodel_code_generator.enums import DefaultValueType
from datamodel_code_generator.format import Formatter

import handlers.stays
from generated.stays import models as generated_models
from handlers.stays.core import summarize
from kumitate.context import CallContext
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

TYPES_FILE = Path(__file__).resolve().parents[2] / "specs" / "stays" / "types" / "stays.json"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """Generate the models with the options from LIBRARY-NOTES (what the lead's codegen uses)."""
    code = generate(
        TYPES_FILE,
        input_file_type=InputFileType.JsonSchema,
        output_model_type=DataModelType.PydanticV2BaseModel,
        target_python_version=PythonVersion.PY_311,
        use_annotated=True,
        field_constraints=True,
        disable_timestamp=True,
        enum_field_as_literal=LiteralType.Off,
        deserialize_default_values=[DefaultValueType.Enum],
        strict_nullable=True,
        collapse_root_models=True,
        formatters=[Formatter.BUILTIN],
        use_double_quotes=True,
    )
    assert isinstance(code, str)
    path = tmp_path_factory.mktemp("gen") / "stays_models.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("stays_models_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Any]:
    settings = Settings(data_dir=tmp_path, sample_dir=Path("data"), public_base_url="http://127.0.0.1:8000")
    setup = ServiceSetup.open("stays", settings)
    try:
        yield handlers.stays.create(setup)
    finally:
        setup.close()


def ctx() -> CallContext:
    return CallContext(service="stays", tool="summarize_stays", transport="test", run_id="run-1", trace_id="trace-1")


def call(models: ModuleType, service: Any, body: dict[str, Any]) -> dict[str, Any]:
    models.SummarizeStaysInput.model_validate(body)  # the schema admits it (the spec's handler_input is data)
    out = service.summarize_stays(body, ctx())
    assert isinstance(out, dict)  # the spec's handler_output is data: no model of 100k entries is built
    models.SummarizeStaysOutput.model_validate(out)  # fails closed like the pipeline
    generated_models.SummarizeStaysOutput.model_validate(out)
    return out


def test_bad_records_survive_the_generated_model(models: ModuleType, service: Any) -> None:
    body = {
        "mode": "sequence",
        "stays": [
            {
                "ref": "ok",
                "code": "13101",
                "name": "千代田区",
                "start_ts": "2024-05-01T09:00:00+09:00",
                "end_ts": "2024-05-01T10:30:00+09:00",
            },
            {"ref": "extra", "code": "13102", "name": "中央区", "lat": 35.67},
            {"ref": "typed", "code": 13103, "name": "港区"},
            {"ref": 7, "code": "13104", "name": "新宿区", "start_ts": "2024-05-01T11:00:00+09:00", "end_ts": None},
        ],
    }
    out = call(models, service, body)
    assert out == summarize(body)
    assert out["results"] == [
        {"ref": "ok", "code": "13101", "name": "千代田区", "duration_sec": 5400},
        {"code": "13104", "name": "新宿区", "duration_sec": None},
    ]
    assert out["errors"] == [
        {"ref": "extra", "index": 1, "reason": "INVALID_INPUT", "message": "unknown field(s): lat"},
        {"ref": "typed", "index": 2, "reason": "MISSING_CODE", "message": "code must be a non-empty string"},
        {"index": 3, "reason": "INVALID_REF", "message": "ref dropped: 1-128 letters, digits or -_.:/#@ expected"},
    ]
    assert out["summary"] == "千代田区に1時間30分滞在→新宿区に滞在（時間不明）"


def test_defaults_come_from_the_model(models: ModuleType, service: Any) -> None:
    out = call(models, service, {"stays": []})
    assert (out["granularity"], out["mode"], out["summary"]) == ("admin", "sequence", "有効な滞在記録はありません")


def test_aggregate_through_the_handler(models: ModuleType, service: Any) -> None:
    body = {
        "granularity": "jarl",
        "mode": "aggregate",
        "stays": [
            {
                "code": "100101",
                "name": "千代田区",
                "start_ts": "2024-05-01T09:00:00Z",
                "end_ts": "2024-05-01T10:00:00Z",
            },
            {
                "code": "100101",
                "name": "千代田区",
                "start_ts": "2024-05-01T11:00:00Z",
                "end_ts": "2024-05-01T11:30:00Z",
            },
        ],
    }
    out = call(models, service, body)
    assert out["results"] == [{"code": "100101", "name": "千代田区", "duration_sec": 5400}]
    assert out["summary"] == "千代田区に合計1時間30分滞在"


def test_log_has_statistics_only(models: ModuleType, service: Any, caplog: pytest.LogCaptureFixture) -> None:
    body = {
        "stays": [
            {
                "ref": "secret-ref",
                "code": "13101",
                "name": "千代田区",
                "start_ts": "2024-05-01T09:00:00+09:00",
                "end_ts": "2024-05-01T10:00:00+09:00",
            },
            {"ref": "bad ref", "name": "中央区"},
        ]
    }
    with caplog.at_level(logging.INFO, logger="kumitate.stays"):
        call(models, service, body)
    (record,) = [r for r in caplog.records if r.name == "kumitate.stays"]
    text = record.getMessage()
    assert text == (
        "summarize_stays mode=sequence input=2 valid=1 rejected=1 dropped_refs=1 unknown_duration=0 total_sec=3600"
    )
    for secret in ("secret-ref", "bad ref", "2024", "千代田区", "中央区", "13101"):
        assert secret not in text
