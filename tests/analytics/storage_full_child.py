"""Run inside a private mount namespace whose service directory is a small tmpfs (see test_storage_full.py).

argv: <database file outside the tmpfs> <service dir on the tmpfs>. Prints one JSON line of outcomes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from handlers.analytics.core.service import AnalyticsService
from kumitate.errors import ToolError
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

BIG = "SELECT * FROM time_series_metrics"
SMALL = "SELECT activity_id, distance_km FROM activities"


def attempt(fn: Any) -> dict[str, Any]:
    try:
        return {"ok": fn()}
    except ToolError as exc:
        return {"code": exc.code, "message": exc.message, "details": exc.details}


def main() -> None:
    db_path, service_dir = Path(sys.argv[1]), Path(sys.argv[2])
    setup = ServiceSetup.open("analytics", Settings.from_env({"KUMITATE_DATA_DIR": str(service_dir.parent)}))
    svc = AnalyticsService(setup.database, service_dir, db_path=db_path)
    out: dict[str, Any] = {}
    try:
        exports = svc.exports.directory
        out["big"] = attempt(lambda: svc.export({"query": BIG, "format": "csv", "max_rows": 1_000_000})["rows"])
        out["left_after_big"] = sorted(p.name for p in exports.iterdir())
        filler = service_dir / "filler"
        with filler.open("wb") as f:  # fill the disk completely
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        out["small_on_full_disk"] = attempt(lambda: svc.export({"query": SMALL, "format": "csv"})["rows"])
        out["profile_on_full_disk"] = attempt(lambda: svc.profile({"table_or_query": "activities"})["row_count"])
        out["left_after_small"] = sorted(p.name for p in exports.iterdir())
        filler.unlink()  # space returns
        handle = None

        def small() -> int:
            nonlocal handle
            result = svc.export({"query": SMALL, "format": "csv"})
            handle = result["handle"]
            return int(result["rows"])

        out["small_after_space_returns"] = attempt(small)
        out["read_back"] = svc.read_export(handle)[0].decode()[:40] if handle else None
    finally:
        svc.close()
        setup.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
