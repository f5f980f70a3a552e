"""Seeded generator of MoneyForward ME style household CSV exports (cp932).

Writes one file per month named like the real export,
`収入・支出詳細_YYYY-MM-01_YYYY-MM-DD.csv`, with the real columns
(計算対象, 日付, 内容, 金額（円）, 保有金融機関, 大項目, 中項目, メモ, 振替, ID).

The data is fictional but shaped like a real two-person household: salary and
bonuses, rent, seasonal utilities, groceries, eating out, card payments and ATM
withdrawals as transfers (振替=1), a few rows excluded from calculation
(計算対象=0) and a handful of deliberate (near-)duplicates so the duplicate
detector has something to find. Output is a pure function of the seed.

    python data/household/generate.py                      # default sample set in this folder
    python data/household/generate.py --out /tmp/x --start 2020-01 --end 2024-12 --scale 20
"""

from __future__ import annotations

import argparse
import calendar
import csv
import random
import string
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HEADER = ["計算対象", "日付", "内容", "金額（円）", "保有金融機関", "大項目", "中項目", "メモ", "振替", "ID"]

#: (大項目, 中項目, 内容 choices, min yen, max yen, mean count per month, accounts)
VARIABLE: list[tuple[str, str, list[str], int, int, float, list[str]]] = [
    ("食費", "食料品", ["イオン", "ライフ", "まいばすけっと", "成城石井", "業務スーパー"], 600, 7800, 14, ["三井住友カード", "現金"]),
    ("食費", "外食", ["すき家", "大戸屋", "サイゼリヤ", "スシロー", "鳥貴族"], 800, 6500, 5, ["三井住友カード", "PayPay"]),
    ("食費", "カフェ", ["スターバックス", "ドトール", "タリーズ"], 300, 1200, 4, ["PayPay", "Suica"]),
    ("食費", "昼ご飯", ["社食", "コンビニ弁当", "松屋"], 450, 1100, 8, ["Suica", "現金"]),
    ("日用品", "日用品", ["マツモトキヨシ", "ダイソー", "無印良品", "ニトリ"], 110, 4200, 4, ["三井住友カード"]),
    ("日用品", "ドラッグストア", ["ウエルシア", "スギ薬局"], 300, 3500, 2, ["PayPay"]),
    ("趣味・娯楽", "映画・音楽・ゲーム", ["TOHOシネマズ", "Nintendo eShop", "Spotify"], 980, 7600, 1.5, ["三井住友カード"]),
    ("趣味・娯楽", "本", ["紀伊國屋書店", "Amazon Kindle"], 500, 3300, 1.5, ["三井住友カード"]),
    ("趣味・娯楽", "旅行", ["じゃらん", "楽天トラベル", "JTB"], 12000, 68000, 0.25, ["三井住友カード"]),
    ("交際費", "飲み会", ["居酒屋 和", "串カツ田中", "磯丸水産"], 3000, 9000, 1.5, ["現金", "PayPay"]),
    ("交際費", "プレゼント", ["高島屋", "Amazon"], 2000, 15000, 0.3, ["三井住友カード"]),
    ("交通費", "電車", ["JR東日本", "東京メトロ"], 140, 2400, 6, ["Suica"]),
    ("交通費", "タクシー", ["GO タクシー", "日本交通"], 900, 5200, 0.6, ["三井住友カード"]),
    ("衣服・美容", "衣服", ["ユニクロ", "GU", "ZARA"], 1500, 16000, 1, ["三井住友カード"]),
    ("衣服・美容", "美容院・理髪", ["ヘアサロン Lien", "QB HOUSE"], 1350, 7700, 0.8, ["PayPay"]),
    ("健康・医療", "病院代", ["内科クリニック", "歯科医院"], 800, 6000, 0.6, ["現金"]),
    ("健康・医療", "薬", ["ツルハドラッグ"], 500, 2800, 0.7, ["PayPay"]),
    ("教養・教育", "書籍", ["丸善", "Amazon"], 800, 4500, 0.8, ["三井住友カード"]),
    ("特別な支出", "家具・家電", ["ヨドバシカメラ", "ビックカメラ", "IKEA"], 3000, 90000, 0.15, ["三井住友カード"]),
]

#: fixed monthly payments: (大項目, 中項目, 内容, day, base amount, account)
FIXED: list[tuple[str, str, str, int, int, str]] = [
    ("住宅", "家賃・地代", "家賃 引落", 27, 85000, "楽天銀行"),
    ("通信費", "携帯電話", "ahamo", 20, 2970, "三井住友カード"),
    ("通信費", "インターネット", "NURO光", 20, 5200, "三井住友カード"),
    ("教養・教育", "新聞・雑誌", "日経電子版", 5, 4277, "三井住友カード"),
    ("保険", "生命保険", "ライフネット生命", 27, 3450, "楽天銀行"),
    ("健康・医療", "フィットネス", "エニタイムフィットネス", 1, 7678, "三井住友カード"),
]

#: seasonal utilities: (中項目, 内容, day, [Jan..Dec] base amounts)
UTILITIES: list[tuple[str, str, int, list[int]]] = [
    ("電気代", "東京電力", 12, [11800, 12500, 10200, 7600, 6200, 7900, 10800, 12900, 9400, 6800, 7300, 9900]),
    ("ガス・灯油代", "東京ガス", 14, [7900, 8400, 7100, 5600, 4300, 3600, 3100, 2900, 3200, 3900, 5200, 6900]),
]
WATER_MONTHS = {2, 4, 6, 8, 10, 12}

MONTHS_FMT = "%Y/%m/%d"


@dataclass
class Row:
    target: int
    day: date
    content: str
    amount: int
    account: str
    major: str
    minor: str
    memo: str
    transfer: int
    row_id: str

    def cells(self) -> list[str]:
        return [str(self.target), self.day.strftime(MONTHS_FMT), self.content, str(self.amount), self.account,
                self.major, self.minor, self.memo, str(self.transfer), self.row_id]


class MonthBuilder:
    """Builds one month's rows; keeps (date, amount) pairs unique so duplicates are only the deliberate ones."""

    def __init__(self, rng: random.Random, year: int, month: int, inflation: float) -> None:
        self.rng, self.year, self.month, self.inflation = rng, year, month, inflation
        self.days = calendar.monthrange(year, month)[1]
        self.rows: list[Row] = []
        self.used: set[tuple[date, int]] = set()

    def new_id(self) -> str:
        return "".join(self.rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(22))

    def add(self, day: int, content: str, amount: int, account: str, major: str, minor: str,
            *, target: int = 1, transfer: int = 0, memo: str = "") -> Row:
        when = date(self.year, self.month, min(day, self.days))
        while (when, amount) in self.used:  # nudge accidental collisions by one yen
            amount += -1 if amount < 0 else 1
        self.used.add((when, amount))
        row = Row(target, when, content, amount, account, major, minor, memo, transfer, self.new_id())
        self.rows.append(row)
        return row

    def price(self, low: int, high: int) -> int:
        value = self.rng.triangular(low, high, low + (high - low) * 0.3) * self.inflation
        return int(round(value / 10.0) * 10) - self.rng.choice([0, 0, 0, 2, 8])

    def build(self, scale: float) -> list[Row]:
        rng = self.rng
        self.add(25, "給与 株式会社サンプル商事", int(312000 * self.inflation), "楽天銀行", "収入", "給与")
        if self.month in (6, 12):
            self.add(10, "賞与 株式会社サンプル商事", int(455000 * self.inflation), "楽天銀行", "収入", "一時所得")
        if rng.random() < 0.3:
            self.add(rng.randint(1, 28), "メルカリ 売上", self.price(800, 9000), "楽天銀行", "収入", "事業・副業")
        for major, minor, content, day, base, account in FIXED:
            self.add(day, content, -int(base * (self.inflation if major != "住宅" else 1.0)), account, major, minor)
        for minor, content, day, by_month in UTILITIES:
            base = by_month[self.month - 1] * self.inflation * rng.uniform(0.9, 1.12)
            self.add(day, content, -int(base), "三井住友カード", "水道・光熱費", minor)
        if self.month in WATER_MONTHS:
            self.add(18, "東京都水道局", -int(rng.uniform(5200, 6600)), "楽天銀行", "水道・光熱費", "水道代")
        for major, minor, contents, low, high, mean, accounts in VARIABLE:
            count = _poisson(rng, mean * scale)
            for _ in range(count):
                self.add(rng.randint(1, self.days), rng.choice(contents), -self.price(low, high),
                         rng.choice(accounts), major, minor)
        # transfers: card settlement and an ATM withdrawal never count as spending
        self.add(10, "三井住友カード 引落", -int(rng.uniform(90000, 160000)), "楽天銀行", "現金・カード",
                 "カード引き落とし", transfer=1)
        self.add(rng.randint(1, 28), "ATM引き出し", -10000 * rng.randint(1, 4), "楽天銀行", "現金・カード",
                 "ATM引き出し", transfer=1)
        # a reimbursed purchase the user excluded from calculation (計算対象=0)
        if rng.random() < 0.25:
            self.add(rng.randint(1, 28), "立替 交通費", -self.price(500, 4000), "Suica", "交通費", "電車",
                     target=0, memo="会社精算")
        return self.rows


def _poisson(rng: random.Random, mean: float) -> int:
    """Knuth's method; fine for the small means used here (scaled means use the normal approximation)."""
    if mean > 30:
        return max(0, round(rng.gauss(mean, mean ** 0.5)))
    limit, k, p = 2.718281828459045 ** (-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def _add_duplicates(rng: random.Random, rows: list[Row], builder: MonthBuilder, kind: str) -> None:
    """Deliberate duplicates: the same purchase exported twice (exact) or seen by two accounts (near)."""
    spend = [r for r in rows if r.amount < 0 and r.transfer == 0 and r.target == 1 and r.major == "食費"]
    if not spend:
        return
    src = rng.choice(spend)
    if kind == "exact":
        copy = Row(src.target, src.day, src.content, src.amount, src.account, src.major, src.minor, src.memo,
                   src.transfer, builder.new_id())
    else:  # one day later, a few yen apart (e.g. a tip or rounding on the card statement)
        day = src.day.replace(day=min(src.day.day + 1, builder.days))
        copy = Row(src.target, day, src.content, src.amount - rng.choice([0, 10, 30]), "PayPay", src.major,
                   src.minor, src.memo, src.transfer, builder.new_id())
    rows.append(copy)


def generate(out_dir: Path, *, start: str = "2022-01", end: str = "2025-12", seed: int = 20251030,
             scale: float = 1.0) -> list[Path]:
    """Write one cp932 CSV per month between start and end (inclusive); return the paths."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    year, month = (int(x) for x in start.split("-"))
    end_year, end_month = (int(x) for x in end.split("-"))
    paths: list[Path] = []
    index = 0
    while (year, month) <= (end_year, end_month):
        inflation = 1.0 + 0.025 * (year - 2022) + 0.002 * month
        builder = MonthBuilder(rng, year, month, inflation)
        rows = builder.build(scale)
        if index % 4 == 1:
            _add_duplicates(rng, rows, builder, "exact")
        if index % 6 == 3:
            _add_duplicates(rng, rows, builder, "near")
        rows.sort(key=lambda r: (r.day, r.row_id), reverse=True)  # MoneyForward exports newest first
        last = calendar.monthrange(year, month)[1]
        path = out_dir / f"収入・支出詳細_{year:04d}-{month:02d}-01_{year:04d}-{month:02d}-{last:02d}.csv"
        with path.open("w", encoding="cp932", newline="") as fh:
            writer = csv.writer(fh, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
            writer.writerow(HEADER)
            writer.writerows(r.cells() for r in rows)
        paths.append(path)
        index += 1
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    parser.add_argument("--start", default="2022-01")
    parser.add_argument("--end", default="2025-12")
    parser.add_argument("--seed", type=int, default=20251030)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies the number of variable purchases")
    args = parser.parse_args()
    paths = generate(args.out, start=args.start, end=args.end, seed=args.seed, scale=args.scale)
    print(f"wrote {len(paths)} files to {args.out}")


if __name__ == "__main__":
    main()
