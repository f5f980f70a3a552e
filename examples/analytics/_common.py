"""Shared set-up for the worked examples: a fresh sample database and token accounting.

Each example plays both sides of the seed's flow: the "LLM" calls tools (only their
small JSON results count as context), and the "code executor" loads exports with the
guarded helpers and prints a small summary. `report()` compares what reached the LLM
with what returning the raw rows would have cost (characters / 4 ~ tokens).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from handlers.analytics.client import estimate_tokens  # noqa: E402
from handlers.analytics.core.service import AnalyticsService  # noqa: E402
from kumitate.service import ServiceSetup  # noqa: E402
from kumitate.settings import Settings  # noqa: E402


class Session:
    """A service on a temporary copy of the default sample data, plus a context ledger."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="analytics-example-")
        self.dir = Path(self._tmp.name)
        self.setup = ServiceSetup.open("analytics", Settings.from_env({"KUMITATE_DATA_DIR": str(self.dir)}))
        self.service = AnalyticsService(self.setup.database, self.setup.data_dir)
        self.exports_dir = self.service.exports.directory
        self.context: list[str] = []  # everything the LLM reads
        self.charts = Path(tempfile.gettempdir()) / "analytics-examples"  # survives the run
        self.charts.mkdir(exist_ok=True)

    def call(self, tool: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call a tool as the LLM would; its JSON result counts as context."""
        result = getattr(self.service, tool)(params)
        self.context.append(json.dumps(result, ensure_ascii=False))
        return dict(result)

    def show(self, text: str) -> None:
        """Something the code executor prints back to the LLM (counts as context)."""
        self.context.append(text)
        print(text)

    def report(self, raw_rows: list[dict[str, Any]]) -> None:
        raw = json.dumps(raw_rows, ensure_ascii=False, default=str)
        seen = "".join(self.context)
        saved = 100 * (1 - len(seen) / len(raw))
        print("\n--- context cost ---")
        print(
            f"raw rows returned to the LLM : {len(raw_rows):>7,} rows, {len(raw.encode()):>9,} bytes, "
            f"~{estimate_tokens(raw):,} tokens"
        )
        print(
            f"handles + summaries (this)   : {len(self.context):>7} msgs, {len(seen.encode()):>9,} bytes, "
            f"~{estimate_tokens(seen):,} tokens"
        )
        print(f"saved: {saved:.1f}% of the tokens")

    def close(self) -> None:
        self.service.close()
        self.setup.close()
        self._tmp.cleanup()
