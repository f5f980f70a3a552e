"""Text helpers shared by indexing and querying: one normalisation, one way to cut terms.

Index and query must agree exactly, or a query typed with full-width digits or
half-width katakana would miss; so both go through `normalize` (NFKC + casefold).
`normalize` also turns control characters (C0/C1, e.g. NUL) and lone surrogates
into spaces: they carry no meaning in a label or a query, and SQLite would cut an
FTS5 expression at a NUL (or refuse a surrogate) — a client typo must never look
like a broken knowledge base.
"""

from __future__ import annotations

import re
from functools import lru_cache

from handlers.yana.japanese import normalize, strip_controls

__all__ = ["normalize", "region_terms", "strip_controls", "text_fingerprint"]

_PREFECTURE = re.compile(r"^(北海道|東京都|京都府|大阪府|.{2,3}?県)")
_UNIT = re.compile(r".+?(?:郡|市|区|町|村)")


_NOT_CONTENT = re.compile(r"[\W_]+")  # after NFKC: whitespace, punctuation, symbols (ー and 々 are \w)
_COMPANY = re.compile(r"株式会社|有限会社|合資会社|合名会社|\((?:株|有|資|名)\)|\bco\W*ltd\b|\binc\b|\bcorp\b")
_KATAKANA = {code: code - 0x60 for code in range(0x30A1, 0x30F7)}


@lru_cache(maxsize=65536)
def text_fingerprint(text: str, *, company: bool = False) -> str:
    """What is left of a label text when formatting is ignored: 「獺祭 純米大吟醸・45」 and 「獺祭純米大吟醸45」
    agree, as do シャイニー and しゃいにー; with `company`, 株式会社/(株)/Co., Ltd. are dropped too."""
    norm = normalize(text)
    if company:
        norm = _COMPANY.sub("", norm)
    return _NOT_CONTENT.sub("", norm).translate(_KATAKANA)


def region_terms(region: str) -> list[str]:
    """Names a user may use for a region: 山口県岩国市 → 山口県, 山口, 岩国市, 岩国.

    Units ending in 郡 are kept whole only; one-character stems (緑区 → 緑) are
    dropped because they would match far too much.
    """
    norm = normalize(region)
    terms: list[str] = []

    def add(term: str) -> None:
        if len(term) >= 2 and term not in terms:
            terms.append(term)

    rest = norm
    match = _PREFECTURE.match(norm)
    if match:
        pref = match.group(1)
        add(pref)
        add(pref if pref == "北海道" else pref[:-1])
        rest = norm[len(pref) :]
    units = _UNIT.findall(rest)
    leftover = rest[sum(len(u) for u in units) :]
    if units and leftover in {"市", "町", "村", "区"}:
        units[-1] += leftover  # 四日市市: the lazy match stopped at 四日市
    for unit in units:
        add(unit)
        if not unit.endswith("郡"):
            add(unit[:-1])
    return terms
