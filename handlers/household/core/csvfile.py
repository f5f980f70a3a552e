"""Reading one MoneyForward ME export (収入・支出詳細_*.csv) into typed rows.

Never raises for bad data: a file-level problem (unreadable, bad encoding,
missing column) comes back as one error with `row=None`; a bad row comes back as
an error with its row number and the rest of the file is still read. Row numbers
count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path

#: canonical column → accepted spellings (exports differ: 大項目/大分類, full/half-width parentheses)
COLUMN_ALIASES: dict[str, tuple[str, ...]] = {
    "計算対象": ("計算対象",),
    "日付": ("日付",),
    "内容": ("内容",),
    "金額（円）": ("金額（円）", "金額(円)", "金額"),
    "保有金融機関": ("保有金融機関", "口座"),
    "大項目": ("大項目", "大分類"),
    "中項目": ("中項目", "中分類"),
    "メモ": ("メモ",),
    "振替": ("振替",),
    "ID": ("ID",),
}
REQUIRED = ("日付", "金額（円）", "大項目", "中項目")


@dataclass(frozen=True, slots=True)
class ParsedRow:
    row_number: int
    date: str  # ISO YYYY-MM-DD
    amount: int
    description: str
    category_major: str
    category_minor: str
    account: str
    memo: str
    is_target: int
    is_transfer: int
    external_id: str


@dataclass(frozen=True, slots=True)
class RowError:
    file: str
    row: int | None
    error: str


def decode(raw: bytes, name: str) -> tuple[str | None, RowError | None, bool]:
    """cp932 first (the export's encoding), then UTF-8 (a re-saved file); else cp932 with replacement.

    Returns (text, file_error, lossy). With `lossy` the rows holding U+FFFD are reported one by one.
    """
    for encoding in ("cp932", "utf-8-sig"):
        try:
            return raw.decode(encoding), None, False
        except UnicodeDecodeError:
            continue
    return raw.decode("cp932", errors="replace"), None, True


def _resolve_columns(header: list[str]) -> tuple[dict[str, int], list[str]]:
    cleaned = [h.strip().lstrip("\ufeff") for h in header]
    index: dict[str, int] = {}
    for canonical, spellings in COLUMN_ALIASES.items():
        for spelling in spellings:
            if spelling in cleaned:
                index[canonical] = cleaned.index(spelling)
                break
    missing = [c for c in REQUIRED if c not in index]
    return index, missing


def parse_date(text: str) -> str:
    parts = text.strip().replace("-", "/").split("/")
    if len(parts) != 3:
        raise ValueError(f"日付の形式が不正です: {text!r}")
    try:
        return date(int(parts[0]), int(parts[1]), int(parts[2])).isoformat()
    except ValueError as exc:
        raise ValueError(f"日付の形式が不正です: {text!r}") from exc


#: Largest amount a row may carry: far above any household figure, well inside SQLite's INTEGER.
MAX_ABS_AMOUNT = 10**12


def parse_amount(text: str) -> int:
    """Whole yen from an export cell; anything else (inf, nan, 1.5, 10^30) is a row error, never a crash."""
    cleaned = text.strip().replace(",", "").replace("円", "").replace("¥", "").replace("\\", "")
    if not cleaned:
        raise ValueError("金額が空です")
    try:
        amount = int(cleaned)
    except ValueError:
        try:
            value = float(cleaned)
        except ValueError as exc:
            raise ValueError(f"金額の形式が不正です: {text!r}") from exc
        if not math.isfinite(value) or value != int(value):
            raise ValueError(f"金額が整数（円）ではありません: {text!r}") from None
        amount = int(value)
    if abs(amount) > MAX_ABS_AMOUNT:
        raise ValueError(f"金額が大きすぎます: {text!r}")
    return amount


def parse_flag(text: str, default: int, column: str) -> int:
    cleaned = text.strip()
    if cleaned == "":
        return default
    if cleaned in ("0", "1"):
        return int(cleaned)
    raise ValueError(f"{column}は 0 か 1 である必要があります: {text!r}")


#: (row_number, date, amount, description, category_major, category_minor, account, memo, is_target, is_transfer,
#: external_id): a ParsedRow's fields in order, as the importer binds them
RowTuple = tuple[int, str, int, str, str, str, str, str, int, int, str]

_FLAG_VALUES = {"0": 0, "1": 1}


def _records(text: str) -> list[list[str] | str]:
    """CSV records; a record the csv module rejects (e.g. a field over csv.field_size_limit(), 128 KiB) is its
    error message instead, and reading goes on with the next line, so one bad row never rejects the file.
    The process-wide field limit is left alone (other services share it)."""
    try:
        return list(csv.reader(io.StringIO(text, newline="")))  # the common case, at full speed
    except csv.Error:
        pass
    records: list[list[str] | str] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    last_line = -1
    while True:
        try:
            records.append(next(reader))
        except StopIteration:
            break
        except csv.Error as exc:
            if reader.line_num == last_line:  # no progress: never loop on the same input
                break
            records.append(f"行を読み込めません（欄が長すぎるか、CSVの形式が不正です）: {exc}")
        last_line = reader.line_num
    return records


def parse_text(text: str, name: str) -> tuple[list[ParsedRow], list[RowError]]:
    """Parse decoded CSV text; `name` is the source file name used in errors."""
    rows, errors = parse_tuples(text, name)
    return [ParsedRow(*r) for r in rows], errors


def parse_tuples(text: str, name: str) -> tuple[list[RowTuple], list[RowError]]:
    """`parse_text` with plain tuples (ParsedRow field order): the importer's fast path, same rows and errors."""
    rows: list[RowTuple] = []
    errors: list[RowError] = []
    records = _records(text)
    if not records:
        return [], [RowError(name, None, "ファイルが空です")]
    header = records[0]
    if isinstance(header, str):
        return [], [RowError(name, None, f"CSVとして読み込めません: {header}")]
    if any("\ufffd" in h for h in header):
        return [], [RowError(name, None, "文字コードが不正です（cp932 として読めません）")]
    columns, missing = _resolve_columns(header)
    if missing:
        return [], [RowError(name, None, f"必須列がありません: {', '.join(missing)}")]
    width = max(columns.values()) + 1
    # no U+FFFD anywhere in the text ⇒ no cell holds one: skip the per-cell scan
    lossy = "\ufffd" in text
    # -1: the optional column is absent (its value is "")
    i_date, i_amount = columns["日付"], columns["金額（円）"]
    i_major, i_minor = columns["大項目"], columns["中項目"]
    i_desc, i_account, i_memo = columns.get("内容", -1), columns.get("保有金融機関", -1), columns.get("メモ", -1)
    i_target, i_transfer, i_id = columns.get("計算対象", -1), columns.get("振替", -1), columns.get("ID", -1)
    dates: dict[str, str] = {}  # parse_date is pure; a file holds a few dozen distinct dates
    flags = _FLAG_VALUES
    append = rows.append
    for offset, record in enumerate(records[1:]):
        row_number = offset + 2
        if isinstance(record, str):
            errors.append(RowError(name, row_number, record))
            continue
        if not record or (not record[0].strip() and all(not cell.strip() for cell in record)):
            continue
        try:
            if len(record) < width:
                raise ValueError(f"列数が不足しています（{width}列必要、{len(record)}列）")
            if lossy and any("\ufffd" in cell for cell in record):
                raise ValueError("文字コードが不正です（cp932 として読めません）")
            major = record[i_major].strip()
            if not major:
                raise ValueError("大項目が空です")
            raw_date = record[i_date].strip()
            iso = dates.get(raw_date)
            if iso is None:
                iso = dates[raw_date] = parse_date(raw_date)
            raw_amount = record[i_amount].strip()
            try:
                amount = int(raw_amount)  # plain integers need none of parse_amount's clean-up
                if abs(amount) > MAX_ABS_AMOUNT:
                    amount = parse_amount(raw_amount)
            except ValueError:
                amount = parse_amount(raw_amount)
            raw = record[i_target].strip() if i_target >= 0 else ""
            is_target = 1 if raw == "" else flags.get(raw)
            if is_target is None:
                is_target = parse_flag(raw, 1, "計算対象")
            raw = record[i_transfer].strip() if i_transfer >= 0 else ""
            is_transfer = 0 if raw == "" else flags.get(raw)
            if is_transfer is None:
                is_transfer = parse_flag(raw, 0, "振替")
        except ValueError as exc:
            errors.append(RowError(name, row_number, str(exc)))
            continue
        append(
            (
                row_number,
                iso,
                amount,
                record[i_desc].strip() if i_desc >= 0 else "",
                major,
                record[i_minor].strip() or "未分類",
                record[i_account].strip() if i_account >= 0 else "",
                record[i_memo].strip() if i_memo >= 0 else "",
                is_target,
                is_transfer,
                record[i_id].strip() if i_id >= 0 else "",
            )
        )
    return rows, errors


def read_file(path: Path) -> tuple[list[ParsedRow], list[RowError]]:
    """Read and parse one export file; every failure becomes a RowError."""
    rows, errors = read_tuples(path)
    return [ParsedRow(*r) for r in rows], errors


def read_tuples(path: Path) -> tuple[list[RowTuple], list[RowError]]:
    """`read_file` with plain tuples (ParsedRow field order)."""
    name = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [], [RowError(name, None, f"データファイルを読み込めません: {exc.strerror or exc}")]
    text, error, _lossy = decode(raw, name)
    if error is not None or text is None:
        return [], [error or RowError(name, None, "文字コードが不正です")]
    return parse_tuples(text, name)
