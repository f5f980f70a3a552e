"""Reading one MoneyForward ME export (収入・支出詳細_*.csv) into typed rows.

Never raises for bad data: a file-level problem (unreadable, bad encoding,
missing column) comes back as one error with `row=None`; a bad row comes back as
an error with its row number and the rest of the file is still read. Row numbers
count the header as row 1, as a spreadsheet shows them.
"""

from __future__ import annotations

import csv
import io
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

    def as_dict(self) -> dict[str, object]:
        return {"file": self.file, "row": self.row, "error": self.error}


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


def parse_amount(text: str) -> int:
    cleaned = text.strip().replace(",", "").replace("円", "").replace("¥", "").replace("\\", "")
    if not cleaned:
        raise ValueError("金額が空です")
    try:
        return int(cleaned)
    except ValueError:
        try:
            value = float(cleaned)
        except ValueError as exc:
            raise ValueError(f"金額の形式が不正です: {text!r}") from exc
        if value != int(value):
            raise ValueError(f"金額が整数（円）ではありません: {text!r}") from None
        return int(value)


def parse_flag(text: str, default: int, column: str) -> int:
    cleaned = text.strip()
    if cleaned == "":
        return default
    if cleaned in ("0", "1"):
        return int(cleaned)
    raise ValueError(f"{column}は 0 か 1 である必要があります: {text!r}")


def parse_text(text: str, name: str) -> tuple[list[ParsedRow], list[RowError]]:
    """Parse decoded CSV text; `name` is the source file name used in errors."""
    rows: list[ParsedRow] = []
    errors: list[RowError] = []
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        return [], [RowError(name, None, f"CSVとして読み込めません: {exc}")]
    if not records:
        return [], [RowError(name, None, "ファイルが空です")]
    header = records[0]
    if any("\ufffd" in h for h in header):
        return [], [RowError(name, None, "文字コードが不正です（cp932 として読めません）")]
    columns, missing = _resolve_columns(header)
    if missing:
        return [], [RowError(name, None, f"必須列がありません: {', '.join(missing)}")]
    width = max(columns.values()) + 1
    for offset, record in enumerate(records[1:]):
        row_number = offset + 2
        if not record or all(not cell.strip() for cell in record):
            continue
        try:
            rows.append(_parse_record(record, columns, width, row_number))
        except ValueError as exc:
            errors.append(RowError(name, row_number, str(exc)))
    return rows, errors


def _parse_record(record: list[str], columns: dict[str, int], width: int, row_number: int) -> ParsedRow:
    if len(record) < width:
        raise ValueError(f"列数が不足しています（{width}列必要、{len(record)}列）")
    if any("\ufffd" in cell for cell in record):
        raise ValueError("文字コードが不正です（cp932 として読めません）")

    def cell(column: str) -> str:
        i = columns.get(column)
        return record[i].strip() if i is not None else ""

    major, minor = cell("大項目"), cell("中項目")
    if not major:
        raise ValueError("大項目が空です")
    return ParsedRow(
        row_number=row_number,
        date=parse_date(cell("日付")),
        amount=parse_amount(cell("金額（円）")),
        description=cell("内容"),
        category_major=major,
        category_minor=minor or "未分類",
        account=cell("保有金融機関"),
        memo=cell("メモ"),
        is_target=parse_flag(cell("計算対象"), 1, "計算対象"),
        is_transfer=parse_flag(cell("振替"), 0, "振替"),
        external_id=cell("ID"),
    )


def read_file(path: Path) -> tuple[list[ParsedRow], list[RowError]]:
    """Read and parse one export file; every failure becomes a RowError."""
    name = path.name
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [], [RowError(name, None, f"データファイルを読み込めません: {exc.strerror or exc}")]
    text, error, _lossy = decode(raw, name)
    if error is not None or text is None:
        return [], [error or RowError(name, None, "文字コードが不正です")]
    return parse_text(text, name)
