"""Every environment variable household reads, typed and checked once at start-up.

Built in `create()` with `setup.read(HouseholdSettings)` and handed down as plain values: nothing
else in handlers/household reads the environment. The README's settings table is generated from
these declarations.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_settings import NoDecode

from kumitate.settings import ServiceSettings, var

#: candidates stored per detection run by default: far more than anyone reviews one by one
MAX_STORED_CANDIDATES = 10_000


def _path_list(value: Any) -> Any:
    """`dir1:dir2` (`;` on Windows: os.pathsep) in the environment; blanks dropped, `~` expanded."""
    if isinstance(value, str):
        return tuple(Path(p.strip()).expanduser() for p in value.split(os.pathsep) if p.strip())
    return value


PathList = Annotated[tuple[Path, ...], NoDecode, BeforeValidator(_path_list)]


class HouseholdSettings(ServiceSettings):
    """The household service's own settings (see docs/household.md)."""

    data_dirs: PathList = var(
        "HOUSEHOLD_DATA_DIR",
        (),
        "directories of MoneyForward ME exports (`収入・支出詳細_*.csv`), `os.pathsep`-separated; "
        "set, the bundled samples are left out (and their stored rows removed)",
        "none (the bundled samples)",
    )
    include_samples: bool = var(
        "HOUSEHOLD_INCLUDE_SAMPLES", False, "`1`: keep the bundled samples beside `HOUSEHOLD_DATA_DIR`"
    )
    chart_ttl_seconds: float = var(
        "HOUSEHOLD_CHART_TTL_SECONDS", 3600.0, "how long a rendered chart can be read (`chart://{chart_id}`)", gt=0
    )
    max_candidates: int = var(
        "HOUSEHOLD_MAX_CANDIDATES",
        MAX_STORED_CANDIDATES,
        "duplicate candidates stored per `detect_duplicates` run (the best by score)",
        ge=1,
    )

    def sources(self, sample_dir: Path) -> list[Path]:
        """The directories imported: `HOUSEHOLD_DATA_DIR`, plus the samples without it or when asked for."""
        keep_samples = not self.data_dirs or self.include_samples
        return [sample_dir, *self.data_dirs] if keep_samples else list(self.data_dirs)
