"""Process settings from the environment, with embedded defaults (files under var/)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kumitate.project import SOURCE_CHECKOUT, Project

REPO_ROOT = SOURCE_CHECKOUT


@dataclass(frozen=True, slots=True)
class Settings:
    """Where services keep state and find bundled data.

    `data_dir` (KUMITATE_DATA_DIR, default the project's `var/`) holds SQLite/DuckDB files and
    caches; `sample_dir` (KUMITATE_SAMPLE_DIR) is the project's sample data under `data/`.
    """

    data_dir: Path
    sample_dir: Path
    public_base_url: str

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        root = Project.discover(env=env).root
        data_dir = Path(env.get("KUMITATE_DATA_DIR", str(root / "var")))
        host = env.get("HOST", "127.0.0.1")
        port = env.get("PORT", "8000")
        return cls(
            data_dir=data_dir,
            sample_dir=Path(env.get("KUMITATE_SAMPLE_DIR", str(root / "data"))),
            public_base_url=env.get("KUMITATE_PUBLIC_URL", f"http://{host}:{port}").rstrip("/"),
        )

    def service_dir(self, service: str) -> Path:
        """A per-service state directory, created on demand."""
        path = self.data_dir / service
        path.mkdir(parents=True, exist_ok=True)
        return path
