"""Ingest one label image plus its metadata: validate, hash, de-duplicate, store, index.

* Source: `image` (base64) or `uri`, exactly one. A `uri` must be `file:` and
  resolve (symlinks followed) inside an allowed directory: the bundled
  data/yana/, the service's uploads/, or a directory listed in
  YANA_INGEST_ALLOW_DIRS (os.pathsep-separated). Nothing is ever fetched over
  the network: http(s) and every other scheme are URI_NOT_ALLOWED, and so is a URI
  with a control character (NUL …), raw or percent-encoded. A path the OS cannot
  even look up (a name too long, a symlink loop) or cannot read is NOT_FOUND.
  Relative paths resolve against the parent of the sample directory, so the
  `file_path` of a hit (data/yana/images/…) can be sent back as `file:data/yana/images/…`.
* Validation by content, not by name: Pillow must identify PNG, JPEG or WebP,
  at most MAX_BYTES bytes and MAX_SIDE pixels a side (MIN_SIDE at least);
  otherwise INVALID_IMAGE (or PAYLOAD_TOO_LARGE for the byte limit).
* Identity: sha1 of the bytes. An image already in the knowledge base returns
  its id with `dedup: true` and changes nothing, so ingest is idempotent even
  without an Idempotency-Key. pHash neighbours (≤ threshold bits) are reported
  as `near_duplicates`; search suppresses them.
"""

from __future__ import annotations

import base64
import binascii
import io
import os
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from PIL import Image, UnidentifiedImageError

from handlers.yana.kb import ImageHashes, KnowledgeBase, hash_image, insert_label
from kumitate.context import commit_gate
from kumitate.errors import ToolError

MAX_BYTES = 5 * 1024 * 1024
MAX_SIDE = 4096
MIN_SIDE = 16
FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def allowed_roots(sample_dir: Path, uploads: Path, env: dict[str, str]) -> list[Path]:
    roots = [(sample_dir / "yana").resolve(), uploads.resolve()]
    roots += [Path(p).resolve() for p in env.get("YANA_INGEST_ALLOW_DIRS", "").split(os.pathsep) if p.strip()]
    return roots


def read_uri(uri: str, roots: list[Path], base: Path) -> bytes:
    """The bytes behind a `file:` URI inside an allowed root; anything else is refused."""
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise ToolError(
            "only file: URIs inside the data directory are accepted; nothing is fetched over the network",
            code="URI_NOT_ALLOWED",
        )
    if parts.netloc not in ("", "localhost"):
        raise ToolError("file: URIs must not name a host", code="URI_NOT_ALLOWED")
    decoded = unquote(parts.path)
    if _CONTROL.search(uri) or _CONTROL.search(decoded):
        raise ToolError("the file: URI contains control characters", code="URI_NOT_ALLOWED")
    raw = Path(decoded)
    joined = raw if raw.is_absolute() else base / raw
    try:
        path = joined.resolve()
    except (OSError, RuntimeError, ValueError):  # name too long, symlink loop …: cannot be an allowed file
        if any(Path(os.path.normpath(joined)).is_relative_to(root) for root in roots):
            raise ToolError("no such file", code="NOT_FOUND") from None
        raise ToolError("the file is outside the allowed directories", code="URI_NOT_ALLOWED") from None
    if not any(path.is_relative_to(root) for root in roots):
        raise ToolError("the file is outside the allowed directories", code="URI_NOT_ALLOWED")
    try:
        if not path.is_file():
            raise ToolError("no such file", code="NOT_FOUND")
        if path.stat().st_size > MAX_BYTES:
            raise ToolError(f"the image is larger than {MAX_BYTES} bytes", code="PAYLOAD_TOO_LARGE")
        return path.read_bytes()
    except (OSError, ValueError):  # ENAMETOOLONG, EACCES, removed meanwhile …
        raise ToolError("no such file (or it cannot be read)", code="NOT_FOUND") from None


def decode_image_field(value: str) -> bytes:
    """Strict base64 (a data: URL prefix is tolerated); bad base64 is INVALID_IMAGE."""
    if value.startswith("data:") and "," in value:
        value = value.split(",", 1)[1]
    if len(value) > (MAX_BYTES * 4) // 3 + 8:
        raise ToolError(f"the image is larger than {MAX_BYTES} bytes", code="PAYLOAD_TOO_LARGE")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ToolError("image is not valid base64", code="INVALID_IMAGE") from None


def inspect_image(data: bytes) -> tuple[str, ImageHashes]:
    """(file extension, hashes) of a valid image; INVALID_IMAGE otherwise."""
    if len(data) > MAX_BYTES:
        raise ToolError(f"the image is larger than {MAX_BYTES} bytes", code="PAYLOAD_TOO_LARGE")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                fmt = probe.format or ""
                width, height = probe.size
                probe.verify()  # structure check without decoding pixels
            if fmt not in FORMATS:
                raise ToolError(
                    f"unsupported image type {fmt or 'unknown'}: use PNG, JPEG or WebP", code="INVALID_IMAGE"
                )
            if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
                raise ToolError(
                    f"image is {width}x{height}; each side must be {MIN_SIDE}..{MAX_SIDE} px", code="INVALID_IMAGE"
                )
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                return FORMATS[fmt], hash_image(data, img)
    except ToolError:
        raise
    except (
        UnidentifiedImageError,
        OSError,
        SyntaxError,
        ValueError,
        Image.DecompressionBombError,
        Image.DecompressionBombWarning,
    ):
        raise ToolError("the data is not a readable PNG, JPEG or WebP image", code="INVALID_IMAGE") from None


def ingest(
    kb: KnowledgeBase, params: dict[str, Any], *, uploads: Path, roots: list[Path], phash_threshold: int = 4
) -> dict[str, Any]:
    """The /v1/ingest body (without envelope fields)."""
    if not str(params.get("brand_name", "")).strip():
        raise ToolError("brand_name must not be blank", code="BAD_REQUEST")
    has_image, has_uri = bool(params.get("image")), bool(params.get("uri"))
    if has_image == has_uri:
        raise ToolError("send exactly one of image (base64) or uri", code="BAD_REQUEST")
    if has_image:
        data = decode_image_field(params["image"])
    else:
        data = read_uri(params["uri"], roots, kb.sample_dir.resolve().parent)
    ext, hashes = inspect_image(data)
    with kb.write_lock, kb.connect() as conn:
        existing = conn.execute("SELECT id, phash FROM labels WHERE hash_sha1 = ?", (hashes.sha1,)).fetchone()
        if existing:
            return {
                "id": existing["id"],
                "dedup": True,
                "hash_sha1": hashes.sha1,
                "phash": existing["phash"],
                "near_duplicates": [],
            }
        mine = int(hashes.phash, 16)
        near = [
            r["id"]
            for r in conn.execute("SELECT id, phash FROM labels WHERE phash IS NOT NULL ORDER BY id")
            if (int(r["phash"], 16) ^ mine).bit_count() <= phash_threshold
        ]
        label_id = f"label_u_{hashes.sha1[:16]}"
        uploads.mkdir(parents=True, exist_ok=True)
        target = uploads / f"{hashes.sha1}.{ext}"
        fresh = not target.exists()
        target.write_bytes(data)
        label = {
            "id": label_id,
            "brand_name": params["brand_name"].strip(),
            "product_name": params.get("product_name", "").strip(),
            "brewery": params.get("brewery", "").strip(),
            "region": params.get("region", "").strip(),
            "category": params.get("category", "sake"),
            "label_features": [f.strip() for f in params.get("label_features", []) if f.strip()],
            "file_path": f"uploads/{target.name}",
        }
        try:
            insert_label(conn, label, hashes, source="ingest")
            with commit_gate():
                conn.commit()
        except BaseException:
            if fresh:
                target.unlink(missing_ok=True)
            raise
    return {"id": label_id, "dedup": False, "hash_sha1": hashes.sha1, "phash": hashes.phash, "near_duplicates": near}
