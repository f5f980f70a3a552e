"""The bundled knowledge base: size, facts layout, images, first-start loading."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import imagehash
from conftest import REPO, make_settings
from PIL import Image

from handlers.yana import YanaHandlers

LABELS = json.loads((REPO / "data/yana/labels.json").read_text(encoding="utf-8"))["labels"]


def test_bundled_set_has_at_least_150_labels_of_both_categories() -> None:
    assert len(LABELS) == 234
    assert sum(1 for x in LABELS if x["category"] == "sake") == 218
    assert sum(1 for x in LABELS if x["category"] == "juice") == 16
    assert len({x["id"] for x in LABELS}) == len(LABELS)
    assert len({(x["brand_name"], x["product_name"]) for x in LABELS}) == len(LABELS)


def test_known_facts_are_present() -> None:
    by_brand = {(x["brand_name"], x["product_name"]): x for x in LABELS}
    dassai = by_brand[("獺祭", "純米大吟醸 45")]
    assert (dassai["brewery"], dassai["region"]) == ("旭酒造", "山口県岩国市")
    assert by_brand[("十四代", "本丸 秘伝玉返し")]["brewery"] == "高木酒造"
    assert by_brand[("POM", "ポンジュース")]["brewery"] == "えひめ飲料"


def test_every_label_has_a_small_png_and_distinct_phash() -> None:
    hashes = []
    for label in LABELS:
        path = REPO / label["file_path"]
        assert path.stat().st_size < 10_000, path
        with Image.open(path) as img:
            assert img.format == "PNG" and img.size == (256, 360)
            hashes.append(imagehash.phash(img))
    closest = min(a - b for i, a in enumerate(hashes) for b in hashes[i + 1 :])
    assert closest >= 10  # far above the search de-duplication threshold (4)


def test_first_start_loads_then_reopen_keeps_the_db(tmp_path: Path, open_yana: Callable[..., Any]) -> None:
    first = open_yana(make_settings(tmp_path))
    assert first.kb.count() == 234
    assert (tmp_path / "kumitate.sqlite3").is_file()  # the storage layer's file; no yana.db of its own
    assert not (tmp_path / "yana" / "yana.db").exists()
    with first.kb.transaction() as conn:
        label = "(SELECT pk FROM yana_labels WHERE id = 'label_0234')"
        conn.exec_driver_sql(f"DELETE FROM yana_label_docs WHERE rowid = {label}")
        conn.exec_driver_sql(f"DELETE FROM yana_region_terms WHERE label_pk = {label}")
        conn.exec_driver_sql("DELETE FROM yana_labels WHERE id = 'label_0234'")
    second = open_yana(make_settings(tmp_path))
    assert second.kb.count() == 233  # not reloaded: the existing DB is kept as it is


def test_shared_fixture_is_loaded(yana: YanaHandlers) -> None:
    assert yana.kb.count() == 234
