"""Ingest one label image plus its metadata: validate, hash, de-duplicate, store, index.

* Source: `image` or `uri`, exactly one. `image` is base64 (or a data: URL), or — the
  duo-talk client's shape — a URI or an upload handle, read as if given in `uri`.
  An upload handle is uploads/<sha1>.<ext>, the file_path of an earlier ingest.
  A http(s) `uri` is fetched only from hosts in YANA_INGEST_URL_ALLOW, with size and
  time limits (handlers.yana.core.fetch). A `file:` URI must resolve (symlinks followed)
  inside an allowed directory: the bundled data/yana/, the service's uploads/, or a
  directory listed in YANA_INGEST_ALLOW_DIRS (os.pathsep-separated). Plain server
  paths (/home/…/x.png) and every other scheme are URI_NOT_ALLOWED, and so is a URI
  with a control character (NUL …), raw or percent-encoded. A path the OS cannot
  even look up (a name too long, a symlink loop) or cannot read is NOT_FOUND.
* Metadata is optional: a missing brand is stored empty (unknown, never guessed)
  with the warning brand_name_unknown.
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
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from PIL import Image, UnidentifiedImageError

from generated.yana.errors import (
    BadRequestError,
    InvalidImageError,
    NotFoundError,
    PayloadTooLargeError,
    UriNotAllowedError,
)
from handlers.yana.core.fetch import ImageFetcher
from handlers.yana.store.kb import ImageHashes, KnowledgeBase, hash_image, insert_label
from kumitate.context import progress
from kumitate.errors import ToolError

MAX_BYTES = 5 * 1024 * 1024
MAX_SIDE = 4096
MIN_SIDE = 16
FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_UPLOAD_HANDLE = re.compile(r"^uploads/([0-9a-f]{40}\.(?:png|jpg|webp))$")


def allowed_roots(sample_dir: Path, uploads: Path, extra: Iterable[Path] = ()) -> list[Path]:
    """The directories `file:` URIs may point into: the bundled labels, the uploads, the operator's extra ones."""
    return [(sample_dir / "yana").resolve(), uploads.resolve(), *(Path(p).resolve() for p in extra)]


def read_uri(uri: str, roots: list[Path], base: Path, fetcher: ImageFetcher | None = None) -> bytes:
    """The bytes behind an allowed http(s) URL or a `file:` URI inside an allowed root; anything else is refused."""
    parts = urlsplit(uri)
    if parts.scheme.lower() in ("http", "https") and fetcher is not None:
        if _CONTROL.search(uri):
            raise UriNotAllowedError("the URI contains control characters")
        return fetcher.fetch(uri)
    if parts.scheme.lower() != "file":
        raise UriNotAllowedError(
            "only file: URIs inside the data directory and http(s) URLs on allowed hosts are accepted"
        )
    if parts.netloc not in ("", "localhost"):
        raise UriNotAllowedError("file: URIs must not name a host")
    decoded = unquote(parts.path)
    if _CONTROL.search(uri) or _CONTROL.search(decoded):
        raise UriNotAllowedError("the file: URI contains control characters")
    raw = Path(decoded)
    joined = raw if raw.is_absolute() else base / raw
    try:
        path = joined.resolve()
    except (OSError, RuntimeError, ValueError):  # name too long, symlink loop …: cannot be an allowed file
        if any(Path(os.path.normpath(joined)).is_relative_to(root) for root in roots):
            raise NotFoundError("no such file") from None
        raise UriNotAllowedError("the file is outside the allowed directories") from None
    if not any(path.is_relative_to(root) for root in roots):
        raise UriNotAllowedError("the file is outside the allowed directories")
    try:
        if not path.is_file():
            raise NotFoundError("no such file")
        if path.stat().st_size > MAX_BYTES:
            raise PayloadTooLargeError(f"the image is larger than {MAX_BYTES} bytes")
        return path.read_bytes()
    except (OSError, ValueError):  # ENAMETOOLONG, EACCES, removed meanwhile …
        raise NotFoundError("no such file (or it cannot be read)") from None


def decode_image_field(value: str) -> bytes:
    """Strict base64 (a data: URL prefix is tolerated); bad base64 is INVALID_IMAGE."""
    if value.startswith("data:") and "," in value:
        value = value.split(",", 1)[1]
    if len(value) > (MAX_BYTES * 4) // 3 + 8:
        raise PayloadTooLargeError(f"the image is larger than {MAX_BYTES} bytes")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidImageError("image is not valid base64") from None


def inspect_image(data: bytes) -> tuple[str, ImageHashes]:
    """(file extension, hashes) of a valid image; INVALID_IMAGE otherwise."""
    if len(data) > MAX_BYTES:
        raise PayloadTooLargeError(f"the image is larger than {MAX_BYTES} bytes")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as probe:
                fmt = probe.format or ""
                width, height = probe.size
                probe.verify()  # structure check without decoding pixels
            if fmt not in FORMATS:
                raise InvalidImageError(f"unsupported image type {fmt or 'unknown'}: use PNG, JPEG or WebP")
            if not (MIN_SIDE <= width <= MAX_SIDE and MIN_SIDE <= height <= MAX_SIDE):
                raise InvalidImageError(f"image is {width}x{height}; each side must be {MIN_SIDE}..{MAX_SIDE} px")
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
        raise InvalidImageError("the data is not a readable PNG, JPEG or WebP image") from None


def image_bytes(
    params: dict[str, Any], *, uploads: Path, roots: list[Path], base: Path, fetcher: ImageFetcher | None
) -> bytes:
    """The image from `image` (base64, or a URI / upload handle) or `uri`; exactly one must be given."""
    image, uri = params.get("image") or "", params.get("uri") or ""
    if bool(image) == bool(uri):
        raise BadRequestError("send exactly one of image (base64, a URI or an upload handle) or uri")
    handle = _UPLOAD_HANDLE.match((image or uri).strip())
    if handle:
        uri, image = (uploads / handle.group(1)).resolve().as_uri(), ""
    elif image and not image.startswith("data:"):
        if _SCHEME.match(image):
            uri = image
        elif "." in image or "\\" in image:  # never in base64: a server path, which is never opened
            raise UriNotAllowedError(
                "server paths are not opened; send base64, a file: URI inside the data directory,"
                " an upload handle (uploads/<sha1>.<ext>) or an http(s) URL on an allowed host"
            )
    if uri:
        return read_uri(uri, roots, base, fetcher)
    return decode_image_field(image)


def ingest(
    kb: KnowledgeBase,
    params: dict[str, Any],
    *,
    uploads: Path,
    roots: list[Path],
    phash_threshold: int = 4,
    fetcher: ImageFetcher | None = None,
) -> dict[str, Any]:
    """The /v1/ingest body (without envelope fields); progress per phase: read, check, store."""
    progress(0, 3, "reading the image")
    data = image_bytes(params, uploads=uploads, roots=roots, base=kb.sample_dir.resolve().parent, fetcher=fetcher)
    brand = str(params.get("brand_name") or "").strip()
    warnings = [] if brand else ["brand_name_unknown"]
    progress(1, 3, "checking the image")
    ext, hashes = inspect_image(data)
    progress(2, 3, "storing the label")
    label_id = f"label_u_{hashes.sha1[:16]}"
    target = uploads / f"{hashes.sha1}.{ext}"
    label = {
        "id": label_id,
        "brand_name": brand,
        "product_name": (params.get("product_name") or "").strip(),
        "brewery": (params.get("brewery") or "").strip(),
        "region": (params.get("region") or "").strip(),
        "category": params.get("category") or "sake",
        "label_features": [f.strip() for f in params.get("label_features") or [] if f.strip()],
        "file_path": f"uploads/{target.name}",
    }
    fresh = False
    try:
        with kb.transaction() as conn:  # the commit waits for the call's commit gate
            existing = kb.store.by_sha1(conn, hashes.sha1)
            if existing is None:
                mine = int(hashes.phash, 16)
                near = [i for i, ph in kb.store.phashes(conn) if (int(ph, 16) ^ mine).bit_count() <= phash_threshold]
                uploads.mkdir(parents=True, exist_ok=True)
                fresh = not target.exists()
                target.write_bytes(data)
                if insert_label(kb.store, conn, label, hashes, source="ingest") is None:
                    existing = kb.store.by_sha1(conn, hashes.sha1)  # stored by another instance meanwhile
    except BaseException:
        if fresh:
            target.unlink(missing_ok=True)
        raise
    if existing is not None:
        return {
            "id": existing["id"],
            "dedup": True,
            "hash_sha1": hashes.sha1,
            "phash": existing["phash"],
            "near_duplicates": [],
            "warnings": [],
        }
    return {
        "id": label_id,
        "dedup": False,
        "hash_sha1": hashes.sha1,
        "phash": hashes.phash,
        "near_duplicates": near,
        "warnings": warnings,
    }
