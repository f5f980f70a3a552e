"""Catalogued failures with the seed's Japanese messages (seed §4.5, §10.9)."""

from __future__ import annotations

import difflib

from kumitate.errors import ToolError

MESSAGES = {
    "data_not_found": "データファイルが見つかりません",
    "category_not_found": "該当カテゴリが見つかりません",
    "insufficient": "対象期間のデータが不足しています",
    "duplicate_not_found": "指定された重複候補が見つかりません",
    "transaction_not_found": "指定された取引が見つかりません",
    "already_marked": "この取引は既に重複としてマークされています",
    "not_marked": "この取引は重複としてマークされていません",
    "chart_not_found": "グラフが見つかりません（有効期限切れの可能性があります）",
}


def data_not_found(detail: str) -> ToolError:
    return ToolError(f"{MESSAGES['data_not_found']}: {detail}", code="DATA_NOT_FOUND")


def unknown_category(name: str, known: list[str]) -> ToolError:
    """VALIDATION_ERROR naming the nearest known categories (difflib), so the caller can retry."""
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.0)
    hint = f"（候補: {', '.join(near)}）" if near else ""
    return ToolError(
        f"{MESSAGES['category_not_found']}: {name}{hint}",
        code="VALIDATION_ERROR",
        details={"category": name, "suggestions": near},
    )


def invalid(message: str) -> ToolError:
    return ToolError(message, code="VALIDATION_ERROR")


def not_found(key: str, ident: object) -> ToolError:
    return ToolError(f"{MESSAGES[key]}（ID {ident}）", code="NOT_FOUND")


def conflict(key: str, ident: object) -> ToolError:
    return ToolError(f"{MESSAGES[key]}（取引ID {ident}）", code="CONFLICT")


def chart_not_found(chart_id: str) -> ToolError:
    return ToolError(f"{MESSAGES['chart_not_found']}: {chart_id}", code="CHART_NOT_FOUND")
