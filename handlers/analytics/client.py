"""Guarded helpers for code that runs *beside* the LLM (seed 004, "Python helper functions").

The flow is PLAN (LLM) -> EXPORT (server returns a handle) -> CODE (these helpers
load and summarise) -> RESULT (small, validated) -> INTERPRET (LLM). Each helper
enforces one limit, so raw rows never reach the LLM's context by accident:

* `safe_load_export(handle, max_rows=10_000)` loads an export into a DataFrame and
  refuses (ExportTooLargeError) when it holds more than `max_rows` rows. The row
  count is read from the Parquet footer (or counted for CSV) *before* loading.
  Over HTTP (`base_url=`), `token=` sends `Authorization: Bearer <token>`; 401, 403
  and 404 raise ExportUnauthorizedError, ExportForbiddenError and ExportNotFoundError.
* `safe_summary_table(df, max_rows=10)` renders at most `max_rows` rows: the head
  and the tail with an "(N rows omitted)" line between them.
* `safe_json_output(data, max_size=1024)` serialises with `ensure_ascii=False`
  (Japanese stays readable) and refuses (OutputTooLargeError) above `max_size` bytes.
* `validate_output(text)` checks any output: JSON at most 1 KB, tables at most 10
  data rows (+5 lines of header/footer); returns (ok, message). A deliberate
  departure from the seed: JSON is checked by its UTF-8 byte size only. The seed also
  applies the 15-line table check to JSON, which would reject the indented JSON that
  `safe_json_output` itself produces within 1 KB; the byte budget is what bounds it.

Only the standard library plus polars/pandas are used for local files, and kumitate's typed
settings to find them (`ExportLocation`, which the server's AnalyticsSettings extends, so both read
KUMITATE_EXPORT_DIR the same way); for `base_url`, httpx and the generated analytics bindings,
which give the route from the spec.

Client-side code, run beside the LLM, never by the server: it lives with the analytics service
(issue 43: the runtime knows no service) and imports none of the server's modules (the server's
settings import `ExportLocation` from it). Importing it runs the package's adapter module
(handlers/analytics/__init__.py), which leaves DuckDB and the storage layer to `create()`.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Mapping
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from kumitate.settings import ServiceSettings, Settings, var

__all__ = [
    "MAX_JSON_SIZE",
    "MAX_LOAD_ROWS",
    "MAX_TABLE_ROWS",
    "ExportAccessError",
    "ExportForbiddenError",
    "ExportLocation",
    "ExportNotFoundError",
    "ExportTooLargeError",
    "ExportUnauthorizedError",
    "OutputTooLargeError",
    "default_exports_dir",
    "estimate_tokens",
    "polars_to_pandas",
    "safe_json_output",
    "safe_load_export",
    "safe_summary_table",
    "validate_output",
]

MAX_JSON_SIZE = 1024
MAX_TABLE_ROWS = 10
MAX_LOAD_ROWS = 10_000
_HANDLE = re.compile(r"^[0-9a-f]{32}$")


class ExportTooLargeError(ValueError):
    """The export holds more rows than the caller allowed."""


class OutputTooLargeError(ValueError):
    """A JSON output would exceed its byte budget."""


class ExportNotFoundError(LookupError):
    """No live export under that handle (unknown or expired)."""


class ExportAccessError(PermissionError):
    """The export server refused the request (HTTP 401 or 403); `status` holds the code."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ExportUnauthorizedError(ExportAccessError):
    """HTTP 401: no bearer token, or one the server does not know."""


class ExportForbiddenError(ExportAccessError):
    """HTTP 403: the token is valid but lacks the `analytics` scope."""


class ExportLocation(ServiceSettings):
    """Where the analytics server keeps export files, read the same way here and by the server.

    The server's `handlers.analytics.settings.AnalyticsSettings` extends this class, so the
    variable is declared (and parsed) once, and these helpers need nothing from handlers/.
    """

    export_dir: Path | None = var(
        "KUMITATE_EXPORT_DIR",
        None,
        "analytics export and materialized-view files; one shared volume for every instance",
        "`<data dir>/analytics/exports`",
    )

    def exports_dir(self, data_dir: Path) -> Path:
        """KUMITATE_EXPORT_DIR, else the analytics directory under the data dir."""
        return self.export_dir or data_dir / "analytics" / "exports"


def default_exports_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the server keeps exports: $KUMITATE_EXPORT_DIR, else $KUMITATE_DATA_DIR/analytics/exports
    (the data dir defaults to the project's var/). `env` defaults to the process environment."""
    settings = Settings.from_env(env)
    return ExportLocation.from_env(settings.env).exports_dir(settings.data_dir)


def _local_export(handle: str, exports_dir: Path) -> tuple[Path, str]:
    meta_path = exports_dir / f"{handle}.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ExportNotFoundError(f"No export {handle} (unknown or expired); run export again.") from None
    if datetime.fromisoformat(meta["expires_at"].replace("Z", "+00:00")) <= datetime.now().astimezone():
        raise ExportNotFoundError(f"Export {handle} has expired; run export again.")
    path = exports_dir / f"{handle}.{meta['format']}"
    if not path.exists():
        raise ExportNotFoundError(f"No export {handle} (unknown or expired); run export again.")
    return path, str(meta["format"])


def _server_message(response: Any) -> str:
    """The catalogued error message of a kumitate error body, if there is one."""
    try:
        error = response.json().get("error") or {}
        return f" ({error.get('code')}: {error.get('message')})" if error.get("code") else ""
    except (ValueError, AttributeError):
        return ""


def _remote_export(handle: str, base_url: str, timeout: float, token: str | None) -> tuple[bytes, str]:
    import httpx

    from generated.analytics.bindings import RESOURCE_EXPORT_FILE  # the spec's route, never a copy of it

    url = RESOURCE_EXPORT_FILE.url(base_url, handle=handle)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(url, timeout=timeout, headers=headers)
    status = response.status_code
    if status == 401:
        hint = "the token was not accepted" if token else "pass token=... (a bearer token with the analytics scope)"
        raise ExportUnauthorizedError(
            f"The export server needs authentication: {hint}{_server_message(response)}.", status
        )
    if status == 403:
        raise ExportForbiddenError(
            f"The token may not read exports: it needs the analytics scope{_server_message(response)}.", status
        )
    if status == 404:
        raise ExportNotFoundError(f"No export {handle} (unknown or expired); run export again.")
    response.raise_for_status()
    kind = "csv" if response.headers.get("content-type", "").startswith("text/csv") else "parquet"
    return response.content, kind


def _count_rows(source: bytes | Path, kind: str) -> int:
    """Row count without materialising the data (Parquet: footer metadata)."""
    import polars as pl

    data: Any = io.BytesIO(source) if isinstance(source, bytes) else source
    frame = pl.scan_parquet(data) if kind == "parquet" else pl.scan_csv(data)
    return int(frame.select(pl.len()).collect().item())


def safe_load_export(
    handle: str,
    max_rows: int = MAX_LOAD_ROWS,
    *,
    engine: Literal["polars", "pandas"] = "polars",
    exports_dir: str | Path | None = None,
    base_url: str | None = None,
    columns: list[str] | None = None,
    timeout: float = 30.0,
    token: str | None = None,
) -> Any:
    """Load an export as a polars (default) or pandas DataFrame, refusing more than `max_rows` rows.

    Source: the exports directory (`exports_dir`, default `default_exports_dir()`), or the
    HTTP resource `{base_url}/v1/analytics/exports/{handle}` when `base_url` is given,
    sending `Authorization: Bearer <token>` when `token` is given (ignored for local files).
    `columns` loads a subset. Raises ExportTooLargeError (a ValueError) naming the row
    count, ExportNotFoundError for unknown/expired handles (HTTP 404), ExportUnauthorizedError
    (HTTP 401) and ExportForbiddenError (HTTP 403), both PermissionErrors, and ValueError
    for a bad handle.
    """
    if not _HANDLE.match(handle or ""):
        raise ValueError("A handle is the 32-hex-digit id returned by export, not a path.")
    if engine not in ("polars", "pandas"):
        raise ValueError("engine must be 'polars' or 'pandas'.")
    source: bytes | Path
    if base_url:
        source, kind = _remote_export(handle, base_url, timeout, token)
    else:
        source, kind = _local_export(handle, Path(exports_dir) if exports_dir else default_exports_dir())
    rows = _count_rows(source, kind)
    if rows > max_rows:
        raise ExportTooLargeError(
            f"Export exceeds max_rows: {rows:,} > {max_rows:,}. Use aggregation or filtering "
            "(a narrower export query, GROUP BY, or LIMIT)."
        )
    import polars as pl

    data = io.BytesIO(source) if isinstance(source, bytes) else source
    df = pl.read_parquet(data, columns=columns) if kind == "parquet" else pl.read_csv(data, columns=columns)
    return polars_to_pandas(df) if engine == "pandas" else df


def polars_to_pandas(df: Any) -> Any:
    """polars -> pandas without pyarrow (not a dependency here): column by column via numpy.

    Nested columns (List, Array, Struct: e.g. an export of `list(heart_rate)`) become
    object columns of Python lists and dicts, which numpy cannot hold as one array.
    """
    import pandas as pd
    import polars as pl

    def column(series: Any) -> Any:
        if isinstance(series.dtype, pl.List | pl.Array | pl.Struct):
            return pd.Series(series.to_list(), dtype=object)
        return series.to_numpy()

    return pd.DataFrame({name: column(df.get_column(name)) for name in df.columns})


def safe_summary_table(df: Any, max_rows: int = MAX_TABLE_ROWS, columns: list[str] | None = None) -> str:
    """Render a polars or pandas DataFrame as text with at most `max_rows` data rows.

    Longer frames show the first ceil(max_rows/2) and last floor(max_rows/2) rows with a
    line "... (N rows omitted) ..." between them. Column subsets via `columns`. A pandas
    or polars Series is shown as a one-column frame. ValueError for max_rows < 1 or an
    unknown column.
    """
    import pandas as pd

    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError("max_rows must be a positive integer.")
    if isinstance(df, pd.Series):
        frame = df.to_frame()
    elif isinstance(df, pd.DataFrame):
        frame = df
    elif hasattr(df, "to_frame") and not hasattr(df, "columns"):  # polars Series
        frame = polars_to_pandas(df.to_frame())
    else:
        frame = polars_to_pandas(df)
    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(
                f"No column(s) {', '.join(map(str, missing))}; columns: {', '.join(map(str, frame.columns))}."
            )
        frame = frame[columns]
    total = len(frame)
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
        if total <= max_rows:
            return str(frame.to_string(index=False))
        head_n = (max_rows + 1) // 2
        tail_n = max_rows - head_n
        shown = pd.concat([frame.head(head_n), frame.tail(tail_n)]) if tail_n else frame.head(head_n)
        lines = frame_lines = shown.to_string(index=False).splitlines()
        lines = [*frame_lines[: head_n + 1], f"... ({total - max_rows} rows omitted) ...", *frame_lines[head_n + 1 :]]
        return "\n".join(lines)


def _json_default(value: Any) -> Any:
    """numpy/pandas/polars values, dates and decimals -> JSON types."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if hasattr(value, "to_dicts"):  # polars DataFrame
        return value.to_dicts()
    if hasattr(value, "to_dict") and hasattr(value, "columns"):  # pandas DataFrame
        return value.to_dict(orient="records")
    if hasattr(value, "to_list"):  # polars Series
        return value.to_list()
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) != 0:  # numpy arrays, pandas Series
        return value.tolist()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if hasattr(value, "isoformat"):  # pandas Timedelta and other time-like values
        return value.isoformat()
    return str(value)


def _no_nan(constant: str) -> None:
    """NaN and ±Infinity are not JSON: they become null."""
    return None


def safe_json_output(data: Any, max_size: int = MAX_JSON_SIZE) -> str:
    """JSON (indent=2, ensure_ascii=False) of `data`; OutputTooLargeError above `max_size` UTF-8 bytes.

    NaN and ±Infinity (which `json.dumps` would write as the non-JSON tokens NaN and
    Infinity) become null, so the result is always valid JSON.
    """
    text = json.dumps(data, ensure_ascii=False, default=_json_default)
    text = json.dumps(json.loads(text, parse_constant=_no_nan), ensure_ascii=False, indent=2)
    size = len(text.encode("utf-8"))
    if size > max_size:
        raise OutputTooLargeError(f"JSON output exceeds max_size: {size} > {max_size} bytes. Reduce output data.")
    return text


def validate_output(output: str) -> tuple[bool, str | None]:
    """Check an output against the limits: (True, None) or (False, reason).

    JSON (anything `json.loads` accepts, as in the seed: objects, arrays and scalars such
    as one long string) must be at most MAX_JSON_SIZE UTF-8 bytes; its line count is not
    checked (see the module notes). Any other text must have at most MAX_TABLE_ROWS + 5
    non-empty lines (ten data rows plus header, separator and omission lines).
    """
    if isinstance(output, bytes):
        output = output.decode("utf-8", errors="replace")
    if not isinstance(output, str):
        raise TypeError("validate_output checks text: pass the string that would be printed.")
    stripped = output.strip()
    try:
        is_json = bool(stripped)
        json.loads(stripped)
    except ValueError:
        is_json = False
    if is_json:
        size = len(stripped.encode("utf-8"))
        if size > MAX_JSON_SIZE:
            return False, f"JSON exceeds {MAX_JSON_SIZE} bytes ({size} bytes); summarise further."
        return True, None
    lines = [line for line in stripped.splitlines() if line.strip()]
    if len(lines) > MAX_TABLE_ROWS + 5:
        return False, f"Table exceeds {MAX_TABLE_ROWS} rows ({len(lines)} lines); use safe_summary_table."
    return True, None


def estimate_tokens(text: str) -> int:
    """A rough token estimate (characters / 4) used by the examples to report savings."""
    return math.ceil(len(text) / 4)
