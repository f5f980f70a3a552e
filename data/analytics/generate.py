"""Generate the running-activity sample database for the analytics service.

    python data/analytics/generate.py                      # var/analytics/activities.duckdb, scale 1
    python data/analytics/generate.py --scale 50 --out /tmp/big.duckdb   # ~10M per-second rows

Scale 1 = 60 activities (~200k per-second rows, under a second); the service runs this
itself on first start when the database is missing. The output is deterministic for a
given (scale, seed). The .duckdb file is never committed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from samples.analytics import activity_count, build_database  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=1.0, help="size factor: 60 activities per unit (default 1)")
    parser.add_argument("--seed", type=int, default=42, help="random seed (default 42)")
    parser.add_argument("--out", type=Path, default=ROOT / "var" / "analytics" / "activities.duckdb",
                        help="output file (default var/analytics/activities.duckdb)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    args = parser.parse_args(argv)
    if args.out.exists() and not args.force:
        print(f"{args.out} exists; pass --force to overwrite", file=sys.stderr)
        return 1
    started = time.perf_counter()
    counts = build_database(args.out, scale=args.scale, seed=args.seed)
    elapsed = time.perf_counter() - started
    print(f"{args.out}: {activity_count(args.scale)} activities, "
          + ", ".join(f"{table} {rows:,}" for table, rows in counts.items())
          + f" rows in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
