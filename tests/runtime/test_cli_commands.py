"""`kumitate call`, `tools`, `generate --check` and `lint` as a developer types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generated.registry import SERVICES
from kumitate.cli import main
from tests.conftest import LiveServer

STAYS = {
    "stays": [
        {
            "code": "13101",
            "name": "千代田区",
            "start_ts": "2024-05-01T09:00:00+09:00",
            "end_ts": "2024-05-01T11:00:00+09:00",
        }
    ]
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KUMITATE_DATA_DIR", str(tmp_path))
    return tmp_path


def test_call_in_process_prints_the_result(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out = run(capsys, "call", "stays", "summarize_stays", "--json", json.dumps(STAYS))
    assert code == 0
    assert json.loads(out)["summary"] == "千代田区に2時間滞在"


def test_call_prints_the_catalogue_error_and_exits_1(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, out = run(capsys, "call", "stays", "summarize_stays", "--json", '{"stays": "nope"}')
    assert code == 1
    assert json.loads(out)["error"]["code"] == "BAD_REQUEST"


def test_call_arguments_from_a_file(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    (data_dir / "args.json").write_text(json.dumps(STAYS), encoding="utf-8")
    code, out = run(capsys, "call", "stays", "summarize_stays", "--json", f"@{data_dir / 'args.json'}")
    assert code == 0 and "results" in json.loads(out)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["call", "nope", "x"], "unknown service 'nope'"),
        (["call", "stays", "nope"], "has no tool 'nope'"),
        (["call", "stays", "summarize_stays", "--json", "[1]"], "must be a JSON object"),
        (["call", "stays", "summarize_stays", "--json", "{"], "not valid JSON"),
    ],
)
def test_call_usage_errors_say_what_is_wrong(argv: list[str], message: str, data_dir: Path) -> None:
    with pytest.raises(SystemExit, match=message):
        main(argv)


def test_tools_lists_every_tool_with_its_hash(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "tools")
    names = {line.split("\t")[0] for line in out.splitlines()}
    assert code == 0
    assert names == {f"{s}.{t.name}" for s, svc in SERVICES.items() for t in svc.tools}


@pytest.mark.slow  # ~7 s: the whole generated tree rendered; `make check` (drift) and `make test` run codegen --check first
def test_generate_check_passes_on_this_repository(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "generate", "--check")
    assert code == 0 and out.startswith("generated code is up to date"), out


def test_lint_passes_on_this_repository(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "lint")[0] == 0


@pytest.mark.slow
def test_tools_and_call_against_a_live_server(capsys: pytest.CaptureFixture[str], live_server: LiveServer) -> None:
    code, out = run(capsys, "tools", "--url", live_server.url)
    assert code == 0, out
    assert out.count("\tok") == sum(len(svc.tools) for svc in SERVICES.values() if not svc.opt_in)
    for transport in ("http", "mcp"):
        code, out = run(
            capsys,
            "call",
            "stays",
            "summarize_stays",
            "--url",
            live_server.url,
            "--transport",
            transport,
            "--json",
            json.dumps(STAYS),
        )
        assert code == 0 and json.loads(out)["summary"] == "千代田区に2時間滞在", (transport, out)
    code, out = run(
        capsys,
        "call",
        "household",
        "get_duplicate_candidate_detail",
        "--url",
        live_server.url,
        "--transport",
        "mcp",
        "--json",
        '{"check_id": 987654}',
    )
    assert code == 1 and json.loads(out)["error"]["code"] == "NOT_FOUND"
