"""Draw one simple label PNG per product in labels.json (data/yana/images/<id>.png).

The images are stand-ins for label photos: big vertical brand name, the product
name, the maker and the region, on a background whose colour and ornament are
derived from the label id. The variation matters: the knowledge base suppresses
near-duplicate hits by perceptual hash, so two different products must not draw
(almost) the same picture. Run from the repository root:

    .venv/bin/python data/yana/draw_labels.py

Output is deterministic for a given Pillow version; the PNGs are committed, so
the server never needs to draw them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import imagehash
import matplotlib_fontja
from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
FONT = Path(matplotlib_fontja.__file__).parent / "fonts" / "ipaexg.ttf"
SIZE = (256, 360)
MIN_DISTANCE = 10  # pHash bits between any two bundled labels (search suppresses at <= 4)
PALETTE = [
    ((250, 246, 235), (30, 30, 30)),  # washi white / ink
    ((20, 40, 90), (245, 240, 225)),  # indigo / cream
    ((120, 20, 30), (250, 235, 200)),  # crimson / gold
    ((30, 70, 45), (240, 235, 210)),  # pine green / cream
    ((235, 200, 80), (40, 25, 10)),  # gold / brown
    ((15, 15, 15), (230, 200, 120)),  # black / gold
    ((200, 225, 240), (20, 40, 80)),  # sky / navy
    ((245, 160, 60), (50, 20, 0)),  # orange (juice) / dark
    ((170, 40, 60), (255, 255, 255)),  # apple red / white
    ((110, 80, 140), (250, 245, 255)),  # purple / white
]


def _seed(label_id: str) -> bytes:
    return hashlib.sha256(label_id.encode()).digest()


def _ornament(draw: ImageDraw.ImageDraw, seed: bytes, fg: tuple[int, int, int]) -> None:
    """A coarse, id-dependent pattern: it dominates the low frequencies pHash sees."""
    kind = seed[1] % 5
    w, h = SIZE
    if kind == 0:  # horizontal bands
        for i in range(seed[2] % 4 + 2):
            y = (seed[3 + i] * h) // 256
            draw.rectangle([0, y, w, y + 10 + seed[8 + i] % 30], fill=fg)
    elif kind == 1:  # big disc (hinomaru-like), position from the seed
        cx, cy, r = 40 + seed[2] % 176, 40 + seed[3] % 280, 40 + seed[4] % 60
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fg)
    elif kind == 2:  # diagonal wedge
        draw.polygon([(0, seed[2] % h), (w, seed[3] % h), (w, h), (0, h)], fill=fg)
    elif kind == 3:  # vertical side panel
        x = seed[2] % 120
        draw.rectangle([x, 0, x + 30 + seed[3] % 60, h], fill=fg)
    else:  # checker of large squares
        step = 60 + seed[2] % 40
        for gx in range(0, w, step):
            for gy in range(0, h, step):
                if ((gx // step) + (gy // step) + seed[3]) % 2 == 0:
                    draw.rectangle([gx, gy, gx + step - 1, gy + step - 1], fill=fg)


def _mix(a: tuple[int, int, int], b: tuple[int, int, int], t: float) -> tuple[int, int, int]:
    return (int(a[0] * (1 - t) + b[0] * t), int(a[1] * (1 - t) + b[1] * t), int(a[2] * (1 - t) + b[2] * t))


def draw_label(label: dict, salt: int = 0) -> Image.Image:
    seed = _seed(label["id"] + (f"#{salt}" if salt else ""))
    palette = PALETTE[7:] if label["category"] == "juice" else PALETTE[:7]
    bg, ink = palette[seed[0] % len(palette)]
    img = Image.new("RGB", SIZE, bg)
    draw = ImageDraw.Draw(img)
    _ornament(draw, seed, _mix(bg, ink, 0.35))
    _ornament(draw, seed[13:] + seed[:13], _mix(bg, ink, 0.6))
    w, h = SIZE
    draw.rectangle([6, 6, w - 7, h - 7], outline=ink, width=3)
    brand = label["brand_name"]
    size = max(28, min(64, 260 // max(1, len(brand))))
    font = ImageFont.truetype(str(FONT), size)
    x = (w - size) // 2
    y = 24
    for ch in brand:  # vertical writing, one glyph per line
        draw.text((x, y), ch, font=font, fill=ink)
        y += size + 2
    small = ImageFont.truetype(str(FONT), 14)
    draw.text((14, h - 64), label["product_name"][:16], font=small, fill=ink)
    draw.text((14, h - 44), label["brewery"][:16], font=small, fill=ink)
    draw.text((14, h - 26), label["region"][:16], font=small, fill=ink)
    return img


def main() -> None:
    labels = json.loads((HERE / "labels.json").read_text(encoding="utf-8"))["labels"]
    out = HERE / "images"
    out.mkdir(exist_ok=True)
    seen: list[int] = []
    for label in labels:
        for salt in range(50):  # redraw until clearly distinct from every earlier label
            img = draw_label(label, salt).quantize(colors=8, dither=Image.Dither.NONE)
            ph = int(str(imagehash.phash(img)), 16)
            if all((ph ^ other).bit_count() >= MIN_DISTANCE for other in seen):
                break
        seen.append(ph)
        img.save(out / f"{label['id']}.png", optimize=True)
    print(f"drew {len(labels)} labels into {out}")


if __name__ == "__main__":
    main()
