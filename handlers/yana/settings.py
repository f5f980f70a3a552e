"""Every environment variable yana reads, typed and checked once at start-up (a bad value stops the
server naming the variable). `create()` reads them with `setup.read(YanaSettings)` and hands the
values down; nothing else in handlers/yana reads the environment.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, SecretStr
from pydantic_settings import NoDecode

from kumitate.settings import CommaList, ServiceSettings, var


def _path_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(Path(item.strip()) for item in value.split(os.pathsep) if item.strip())
    return value


def _one_or_zero(value: Any) -> Any:
    """`1` on, `0` or unset off: the runtime serves an `enabled_by` resource only for exactly `1`, so any
    other spelling (`true`, `yes`) is refused at start-up instead of silently leaving it off."""
    if isinstance(value, str):
        if value not in ("0", "1"):
            raise ValueError("set 1 to serve logs://today, or 0 (or leave unset) not to")
        return value == "1"
    return value


PathList = Annotated[tuple[Path, ...], NoDecode, BeforeValidator(_path_list)]
"""`/a:/b` in the environment (os.pathsep-separated, as PATH is); blanks dropped."""
OneOrZero = Annotated[bool, BeforeValidator(_one_or_zero)]


class YanaSettings(ServiceSettings):
    """yana's own variables; see docs/yana.md for what each changes on the wire."""

    openai_base_url: str | None = var(
        "OPENAI_BASE_URL",
        None,
        "OpenAI-compatible API base (e.g. `https://api.openai.com/v1`); with the key and model, chat replies come from the LLM",
        "none (template replies)",
    )
    openai_api_key: SecretStr | None = var("OPENAI_API_KEY", None, "bearer key of that API", "none")
    openai_model: str | None = var(
        "OPENAI_MODEL", None, "model name sent to that API (also `yana://version`'s `model`)", "none"
    )
    llm_deadline_ms: int = var(
        "YANA_LLM_DEADLINE_MS", 8000, "deadline of one LLM reply (retry included; never past the call's own)", gt=0
    )
    llm_reserve_ms: int = var(
        "YANA_LLM_RESERVE_MS", 1000, "time kept free at the end of a chat call for the template fallback", ge=0
    )
    llm_breaker_failures: int = var(
        "YANA_LLM_BREAKER_FAILURES", 3, "consecutive LLM failures that open the circuit breaker", ge=1
    )
    llm_breaker_cooldown_s: float = var(
        "YANA_LLM_BREAKER_COOLDOWN_S", 30.0, "seconds the open breaker waits before trying the LLM again", ge=0
    )
    dedup_phash: int = var(
        "YANA_DEDUP_PHASH",
        4,
        "pHash bits within which two labels count as the same (search hides the worse)",
        ge=0,
        le=64,
    )
    uploads_dir: Path | None = var(
        "YANA_UPLOADS_DIR",
        None,
        "where ingested images are kept (a shared volume when several instances serve one database)",
        "`<data dir>/yana/uploads`",
    )
    ingest_allow_dirs: PathList = var(
        "YANA_INGEST_ALLOW_DIRS",
        (),
        "more directories ingest's `file:` URIs may point into (`os.pathsep`-separated)",
        "none (data/yana and uploads only)",
    )
    ingest_url_allow: CommaList = var(
        "YANA_INGEST_URL_ALLOW",
        (),
        "hosts ingest may fetch http(s) images from, comma-separated (`host`, `host:port`, `*.example.com`)",
        "none (no fetching)",
    )
    ingest_fetch_timeout_ms: int = var(
        "YANA_INGEST_FETCH_TIMEOUT_MS", 5000, "deadline of one image fetch (never past the call's own)", gt=0
    )
    expose_logs: OneOrZero = var("YANA_EXPOSE_LOGS", False, "`1`: serve yana's call journal `logs://today`")
