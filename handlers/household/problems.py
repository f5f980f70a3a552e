"""Catalogued failures with the seed's Japanese messages (seed §4.5, §10.9)."""

from __future__ import annotations

import difflib

from generated.errors import ChartNotFoundError, ConflictError, DataNotFoundError, NotFoundError, ValidationError

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


#: difflib ratio below which a name is not offered as "did you mean" (0.0 offered anything at all)
SUGGEST_CUTOFF = 0.4

#: why a category that exists in the data is still not a spending category
NOT_SPENDING = {
    "income": "収入のカテゴリです。推移は支出カテゴリのみ対象です",
    "transfer": "振替のカテゴリです。振替は支出に数えません",
    "other": "支出として数える取引がありません（収入・振替・計算対象外のみ）",
}


def data_not_found(detail: str) -> DataNotFoundError:
    """No export at all, or no data for the month asked (seed §4.5: the CSV is missing)."""
    return DataNotFoundError(f"{MESSAGES['data_not_found']}: {detail}")


def insufficient(detail: str) -> DataNotFoundError:
    """Data exists, but none in the period asked (seed §4.5: データ不足で指標計算不可)."""
    return DataNotFoundError(f"{MESSAGES['insufficient']}: {detail}")


def unknown_category(
    name: str, known: list[str], fallback: list[str] | None = None, kind: str | None = None
) -> ValidationError:
    """VALIDATION_ERROR naming the nearest spending categories, so the caller can retry.

    `known`: the spending categories; `fallback`: what to offer when none is near (e.g. the largest ones);
    `kind`: set when `name` exists in the data but holds no spending (income / transfer / other).
    """
    near = [] if kind else difflib.get_close_matches(name, known, n=3, cutoff=SUGGEST_CUTOFF)
    suggestions = near or list(fallback or [])[:3]
    parts = [NOT_SPENDING[kind]] if kind in NOT_SPENDING else []
    if near:
        parts.append(f"候補: {', '.join(near)}")
    elif suggestions:
        parts.append(f"支出カテゴリの例: {', '.join(suggestions)}")
    hint = f"（{'。'.join(parts)}）" if parts else ""
    return ValidationError(
        f"{MESSAGES['category_not_found']}: {name}{hint}",
        details={"category": name, "suggestions": suggestions, "not_spending": kind},
    )


def not_found_category(name: str) -> NotFoundError:
    """A category no stored transaction carries (the resource data://categories/{category})."""
    return NotFoundError(f"{MESSAGES['category_not_found']}: {name}（data://category_hierarchy に一覧があります）")


def invalid(message: str) -> ValidationError:
    return ValidationError(message)


def not_found(key: str, ident: object) -> NotFoundError:
    return NotFoundError(f"{MESSAGES[key]}（ID {ident}）")


def conflict(key: str, ident: object) -> ConflictError:
    return ConflictError(f"{MESSAGES[key]}（取引ID {ident}）")


def chart_not_found(chart_id: str) -> ChartNotFoundError:
    return ChartNotFoundError(f"{MESSAGES['chart_not_found']}: {chart_id}")
