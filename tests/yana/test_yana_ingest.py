"""Ingest: content-based validation, size limits, sha1 dedup, file: URI allowlist, searchable afterwards."""

from __future__ import annotations

import base64
import hashlib
import io
import os
from pathlib import Path

import pytest
from conftest import REPO, ctx
from PIL import Image

from handlers.yana import YanaHandlers
from kumitate.errors import ToolError


def image_b64(fmt: str = "PNG", size: tuple[int, int] = (64, 80), color: tuple[int, int, int] = (200, 30, 30)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, format=fmt)
    return base64.b64encode(buf.getvalue()).decode()


def code_of(yana: YanaHandlers, params: dict) -> str:
    with pytest.raises(ToolError) as err:
        yana.ingest(params, ctx())
    return err.value.code


def test_new_image_is_stored_hashed_and_searchable(fresh: YanaHandlers) -> None:
    data = image_b64("WEBP")
    out = fresh.ingest(
        {
            "image": data,
            "brand_name": "テスト銘柄",
            "product_name": "純米吟醸 試験醸造",
            "brewery": "試験酒造",
            "region": "北海道小樽市",
            "label_features": ["純米吟醸"],
        },
        ctx(),
    )
    sha1 = hashlib.sha1(base64.b64decode(data)).hexdigest()
    assert out["id"] == f"label_u_{sha1[:16]}" and out["dedup"] is False and out["hash_sha1"] == sha1
    assert len(out["phash"]) == 16
    assert (fresh.uploads / f"{sha1}.webp").read_bytes() == base64.b64decode(data)
    hits = fresh.search({"filters": {"region": "小樽"}}, ctx())["hits"]
    assert [h["id"] for h in hits] == ["label_0205", out["id"]]
    assert hits[1]["file_path"] == f"uploads/{sha1}.webp"


def test_same_bytes_twice_is_dedup(fresh: YanaHandlers) -> None:
    data = image_b64("JPEG")
    first = fresh.ingest({"image": data, "brand_name": "一回目"}, ctx())
    second = fresh.ingest({"image": data, "brand_name": "二回目"}, ctx())
    assert second == {**first, "dedup": True, "near_duplicates": []}
    assert fresh.kb.count() == 235


def test_bundled_image_by_uri_is_dedup(fresh: YanaHandlers) -> None:
    out = fresh.ingest({"uri": "file:data/yana/images/label_0001.png", "brand_name": "獺祭"}, ctx())
    assert out["id"] == "label_0001" and out["dedup"] is True
    absolute = (REPO / "data/yana/images/label_0002.png").as_uri()
    assert fresh.ingest({"uri": absolute, "brand_name": "獺祭"}, ctx())["id"] == "label_0002"


def test_type_is_checked_by_content(fresh: YanaHandlers) -> None:
    assert code_of(fresh, {"image": base64.b64encode(b"hello").decode(), "brand_name": "x"}) == "INVALID_IMAGE"
    assert code_of(fresh, {"image": image_b64("GIF"), "brand_name": "x"}) == "INVALID_IMAGE"
    assert code_of(fresh, {"image": image_b64("BMP"), "brand_name": "x"}) == "INVALID_IMAGE"
    assert code_of(fresh, {"image": "not base64 !!", "brand_name": "x"}) == "INVALID_IMAGE"
    truncated = base64.b64encode(base64.b64decode(image_b64())[:60]).decode()
    assert code_of(fresh, {"image": truncated, "brand_name": "x"}) == "INVALID_IMAGE"


def test_dimensions_and_size_are_bounded(fresh: YanaHandlers) -> None:
    assert code_of(fresh, {"image": image_b64(size=(8, 8)), "brand_name": "x"}) == "INVALID_IMAGE"
    assert code_of(fresh, {"image": image_b64(size=(5000, 20)), "brand_name": "x"}) == "INVALID_IMAGE"
    big = base64.b64encode(os.urandom(5 * 1024 * 1024 + 10)).decode()
    assert code_of(fresh, {"image": big, "brand_name": "x"}) == "PAYLOAD_TOO_LARGE"


def test_exactly_one_source_brand_optional(fresh: YanaHandlers) -> None:
    assert code_of(fresh, {"brand_name": "x"}) == "BAD_REQUEST"
    assert (
        code_of(fresh, {"image": image_b64(), "uri": "file:data/yana/images/label_0001.png", "brand_name": "x"})
        == "BAD_REQUEST"
    )
    # no brand (the duo-talk client sends none): stored as unknown, never guessed, and said so
    result = fresh.ingest({"image": image_b64(), "brand_name": "  ", "category": "juice"}, ctx())
    assert result["dedup"] is False and result["warnings"] == ["brand_name_unknown"]
    hit = next(
        h
        for h in fresh.search({"filters": {"category": "juice"}, "k": 20, "page_size": 20}, ctx())["hits"]
        if h["id"] == result["id"]
    )
    assert hit["brand_name"] == ""


def test_uri_allowlist(fresh: YanaHandlers, tmp_path: Path) -> None:
    for uri in [
        "https://example.com/label.png",
        "http://127.0.0.1:8000/v1/version",
        "ftp://x/y.png",
        "data:image/png;base64,AAAA",
        "file://evil.test/etc/passwd",
        "file:///etc/passwd",
        "file:data/yana/../../pyproject.toml",
        "file:data/yana/images/../../../kumitate/project.py",
    ]:
        assert code_of(fresh, {"uri": uri, "brand_name": "x"}) == "URI_NOT_ALLOWED", uri
    outside = tmp_path / "outside.png"
    outside.write_bytes(base64.b64decode(image_b64()))
    assert code_of(fresh, {"uri": outside.as_uri(), "brand_name": "x"}) == "URI_NOT_ALLOWED"
    link = fresh.uploads / "link.png"
    fresh.uploads.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)  # inside the uploads dir, but pointing out of it
    assert code_of(fresh, {"uri": link.as_uri(), "brand_name": "x"}) == "URI_NOT_ALLOWED"
    assert code_of(fresh, {"uri": "file:data/yana/images/nope.png", "brand_name": "x"}) == "NOT_FOUND"


def test_extra_allowed_directory(make_fresh, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.png").write_bytes(base64.b64decode(image_b64(color=(1, 2, 3))))
    yana = make_fresh({"YANA_INGEST_ALLOW_DIRS": str(inbox)})
    assert yana.ingest({"uri": (inbox / "a.png").as_uri(), "brand_name": "受付"}, ctx())["dedup"] is False


def test_control_characters_and_unusable_paths_are_catalogued_errors(fresh: YanaHandlers) -> None:
    """These used to escape as ValueError (embedded null byte) / OSError (ENAMETOOLONG): 500 INTERNAL."""
    for uri in [
        "file:data/yana/images/%00x.png",
        "file:data/yana/images/x\x00.png",
        "file:data/yana/images/%0Alabel_0001.png",
        "file:data/yana/images/label_0001.png%7F",
        "file:data/yana/images/\x1b[31m.png",
        "file:data/yana/images/%ED%A0%80.png",  # an encoded lone surrogate: not a name either
    ]:
        assert code_of(fresh, {"uri": uri, "brand_name": "x"}) in {"URI_NOT_ALLOWED", "NOT_FOUND"}, uri
    assert code_of(fresh, {"uri": "file:data/yana/images/%00x.png", "brand_name": "x"}) == "URI_NOT_ALLOWED"
    long_name = "file:data/yana/" + "a" * 300 + ".png"  # ENAMETOOLONG inside the data directory
    assert code_of(fresh, {"uri": long_name, "brand_name": "x"}) == "NOT_FOUND"
    deep = "file:data/yana/" + "/".join(["b" * 250] * 20) + ".png"  # PATH too long as a whole
    assert code_of(fresh, {"uri": deep, "brand_name": "x"}) == "BAD_REQUEST"  # over the schema's 2048 first
    assert code_of(fresh, {"uri": "file:///" + "a" * 300 + ".png", "brand_name": "x"}) == "URI_NOT_ALLOWED"


def test_symlink_loop_is_not_found(fresh: YanaHandlers) -> None:
    fresh.uploads.mkdir(parents=True, exist_ok=True)
    loop = fresh.uploads / "loop.png"
    loop.symlink_to(loop)
    assert code_of(fresh, {"uri": loop.as_uri(), "brand_name": "x"}) == "NOT_FOUND"  # RuntimeError / ELOOP
