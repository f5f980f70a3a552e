"""duo-talk's MCP provider over stdio, byte for byte: Content-Length frames and its pre-standard handshake.

It sends `initialize` with only clientInfo, then `tools/list` without `notifications/initialized`,
then `tools/call` chat and parses result.content[0].text as JSON (providers/speaker_mcp.py in
kumaxxp/duo-talk). Standard newline-delimited clients are covered by tests/e2e (mcp SDK stdio client).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kumitate.stdio_framing import read_frame, write_frame
from tests.conftest import REPO, seeded_copy

pytestmark = pytest.mark.slow


class FramedClient:
    def __init__(self, data_dir: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "KUMITATE_DATA_DIR": str(data_dir), "FASTMCP_LOG_LEVEL": "ERROR"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kumitate", "mcp", "--stdio", "--service", "yana"],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 0

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        write_frame(self.proc.stdin, json.dumps(request, ensure_ascii=False).encode("utf-8"))
        while True:
            body = read_frame(self.proc.stdout)
            assert body is not None, "the server closed stdout"
            message = json.loads(body)
            if message.get("id") == self.next_id:
                return message  # type: ignore[no-any-return]

    def close(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def test_content_length_client_works_unchanged(tmp_path: Path, seeded_data_dir: Path) -> None:
    client = FramedClient(seeded_copy(seeded_data_dir, tmp_path / "var"))
    try:
        init = client.call("initialize", {"clientInfo": {"name": "duo-talk", "version": "0"}})
        assert "error" not in init and init["result"]["serverInfo"]
        tools = client.call("tools/list", {})
        assert "chat" in {t["name"] for t in tools["result"]["tools"]}
        args = {
            "user_text": "獺祭ってどんなお酒？",
            "use_rag": True,
            "top_k": 3,
            "filters": {"category": "sake"},
            "context": {"run_id": "duo-mcp-1", "disable_sayana": True},
        }
        result = client.call("tools/call", {"name": "chat", "arguments": args})["result"]
        js = json.loads(result["content"][0]["text"])
        assert js["reply"] and not js["reply"].startswith("せやなー") and js["hits"][0]["brand_name"] == "獺祭"
        assert js["server_version"] == "1.0.0" and js["trace_id"]
    finally:
        client.close()
