"""Draw the pictures Cindy ships: the sample media (the scenes their descriptions describe) and the
site's favicon.

    .venv/bin/python scripts/draw_pictures.py

Writes samples/media/<unique id>.png (beside each description's JSON) and static/cindy/favicon.ico.
Each picture is drawn at four times its size and scaled down, which smooths the edges. The output is
deterministic, so running the script again changes nothing in git.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter

ROOT = Path(__file__).resolve().parent.parent
MEDIA = ROOT / "samples" / "media"
FAVICON = ROOT / "static" / "cindy" / "favicon.ico"

SCALE = 4
STICKER = 256  # sticker pictures are square, on a transparent background
PHOTO = (480, 320)

SKIN = (246, 204, 170, 255)
BEARD = (250, 250, 246, 255)
HAT_RED = (205, 38, 44, 255)
COAT_BLUE = (46, 96, 170, 255)
BOOT = (92, 58, 34, 255)
INK = (40, 30, 30, 255)
OUTLINE = (60, 40, 30, 255)


def _canvas(size: tuple[int, int], background: tuple[int, ...] = (0, 0, 0, 0)) -> Image.Image:
    return Image.new("RGBA", (size[0] * SCALE, size[1] * SCALE), background)


def _finish(image: Image.Image, size: tuple[int, int]) -> Image.Image:
    return image.resize(size, Image.Resampling.LANCZOS)


class Pen:
    """Drawing in the picture's own coordinates (0..size), scaled to the big canvas."""

    def __init__(self, image: Image.Image) -> None:
        self.draw = ImageDraw.Draw(image)

    @staticmethod
    def _box(box: tuple[float, float, float, float]) -> list[float]:
        return [v * SCALE for v in box]

    @staticmethod
    def _points(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(x * SCALE, y * SCALE) for x, y in points]

    def ellipse(self, box, fill, outline=OUTLINE, width: float = 2.5) -> None:
        self.draw.ellipse(self._box(box), fill=fill, outline=outline, width=round(width * SCALE))

    def polygon(self, points, fill, outline=OUTLINE, width: float = 2.5) -> None:
        self.draw.polygon(self._points(points), fill=fill, outline=outline, width=round(width * SCALE))

    def rectangle(self, box, fill, outline=None, width: float = 0) -> None:
        self.draw.rectangle(self._box(box), fill=fill, outline=outline, width=round(width * SCALE))

    def line(self, points, fill, width: float) -> None:
        self.draw.line(self._points(points), fill=fill, width=round(width * SCALE), joint="curve")

    def arc(self, box, start: float, end: float, fill, width: float) -> None:
        self.draw.arc(self._box(box), start, end, fill=fill, width=round(width * SCALE))

    def rounded(self, box, radius: float, fill, outline=OUTLINE, width: float = 2.5) -> None:
        self.draw.rounded_rectangle(
            self._box(box), radius * SCALE, fill=fill, outline=outline, width=round(width * SCALE)
        )


def _gnome(pen: Pen, cx: float, top: float, *, arms: Callable[[Pen, float, float], None]) -> None:
    """A round-bellied gnome whose hat tip is at (cx, top); `arms` draws the arms from the shoulders."""
    pen.ellipse((cx - 40, top + 196, cx - 6, top + 216), BOOT)
    pen.ellipse((cx + 6, top + 196, cx + 40, top + 216), BOOT)
    pen.ellipse((cx - 52, top + 110, cx + 52, top + 206), COAT_BLUE)
    pen.rectangle((cx - 50, top + 166, cx + 50, top + 176), (70, 45, 30, 255))
    pen.rectangle((cx - 8, top + 164, cx + 8, top + 178), (230, 190, 60, 255), OUTLINE, 1.5)
    arms(pen, cx, top)
    pen.polygon(
        [
            (cx - 30, top + 96),
            (cx + 30, top + 96),
            (cx + 24, top + 140),
            (cx, top + 168),
            (cx - 24, top + 140),
        ],
        BEARD,
    )
    pen.ellipse((cx - 28, top + 62, cx + 28, top + 114), SKIN)
    pen.ellipse((cx - 30, top + 92, cx + 30, top + 130), BEARD, outline=None)  # moustache and cheeks
    pen.ellipse((cx - 7, top + 86, cx + 7, top + 100), (236, 150, 140, 255), width=1.5)  # nose
    pen.ellipse((cx - 15, top + 78, cx - 9, top + 85), INK, outline=None)
    pen.ellipse((cx + 9, top + 78, cx + 15, top + 85), INK, outline=None)
    pen.arc((cx - 14, top + 96, cx + 14, top + 114), 15, 165, INK, 2.5)  # the grin
    pen.polygon([(cx - 34, top + 72), (cx + 34, top + 72), (cx + 6, top + 4), (cx, top)], HAT_RED)


def _waving_arms(pen: Pen, cx: float, top: float) -> None:
    for side in (-1, 1):
        shoulder = (cx + side * 40, top + 128)
        hand = (cx + side * 78, top + 66)
        pen.line([shoulder, (cx + side * 66, top + 104), hand], COAT_BLUE, 16)
        pen.ellipse((hand[0] - 12, hand[1] - 12, hand[0] + 12, hand[1] + 12), SKIN)
        for radius in (22, 30):  # motion marks beside each waving hand
            box = (hand[0] - radius, hand[1] - radius, hand[0] + radius, hand[1] + radius)
            start = 200 if side < 0 else -20
            pen.arc(box, start, start + 40, (90, 90, 90, 255), 2)


def draw_gnome_waving() -> Image.Image:
    image = _canvas((STICKER, STICKER))
    _gnome(Pen(image), 128, 22, arms=_waving_arms)
    return _finish(image, (STICKER, STICKER))


def draw_gnome_mushroom() -> Image.Image:
    image = _canvas((STICKER, STICKER))
    pen = Pen(image)
    cx, top = 112, 40

    def holding_arms(pen: Pen, cx: float, top: float) -> None:
        for side in (-1, 1):
            pen.line([(cx + side * 40, top + 128), (cx + side * 30 + 50, top + 96)], COAT_BLUE, 15)

    # The mushroom first: the gnome holds it up before him, its cap over his right shoulder.
    pen.rounded((150, 66, 186, 188), 14, (245, 236, 214, 255))
    pen.polygon([(96, 86), (240, 86), (226, 40), (196, 10), (140, 10), (110, 40)], HAT_RED)
    pen.ellipse((96, 70, 240, 102), HAT_RED, outline=None)
    pen.arc((96, 62, 240, 104), 0, 180, OUTLINE, 2.5)
    for x, y, r in [(130, 36, 10), (172, 24, 12), (214, 44, 10), (156, 64, 9), (200, 72, 8), (118, 70, 7)]:
        pen.ellipse((x - r, y - r, x + r, y + r), (255, 255, 255, 255), outline=None)
    _gnome(pen, cx, top, arms=holding_arms)
    for side in (0, 1):
        x = 148 + side * 40
        pen.ellipse((x - 11, 126 - side * 6, x + 11, 148 - side * 6), SKIN)
    return _finish(image, (STICKER, STICKER))


def draw_squirrel_acorn() -> Image.Image:
    image = _canvas((STICKER, STICKER))
    pen = Pen(image)
    fur, belly = (196, 104, 48, 255), (240, 200, 150, 255)
    # The tail: a big curl behind the body.
    pen.ellipse((128, 24, 236, 204), fur)
    pen.ellipse((150, 30, 220, 110), (214, 124, 64, 255), outline=None)
    pen.ellipse((56, 96, 168, 232), fur)  # body
    pen.ellipse((78, 130, 146, 226), belly, outline=None)
    pen.ellipse((60, 212, 100, 232), fur)
    pen.ellipse((124, 212, 164, 232), fur)
    pen.polygon([(70, 52), (78, 18), (94, 46)], fur)  # ears
    pen.polygon([(112, 46), (126, 16), (132, 52)], fur)
    pen.ellipse((58, 34, 146, 112), fur)  # head
    pen.ellipse((86, 74, 140, 110), belly, outline=None)  # muzzle
    pen.ellipse((128, 78, 138, 88), INK, outline=None)  # nose
    pen.arc((76, 58, 98, 74), 200, 340, INK, 3)  # eyes shut in bliss
    pen.arc((104, 56, 124, 72), 200, 340, INK, 3)
    pen.arc((104, 86, 132, 104), 20, 160, INK, 2.5)  # the smile
    # The acorn, hugged to the chest, and the paws around it.
    pen.ellipse((86, 134, 138, 200), (196, 150, 60, 255))
    pen.ellipse((98, 150, 112, 176), (255, 236, 170, 255), outline=None)  # the shine
    pen.ellipse((80, 118, 144, 150), (120, 80, 40, 255))
    for x in range(88, 140, 9):
        pen.line([(x, 122), (x + 6, 146)], (90, 58, 30, 255), 1.5)
    pen.line([(112, 118), (116, 104)], (90, 58, 30, 255), 4)
    pen.ellipse((72, 150, 96, 172), fur)
    pen.ellipse((128, 150, 152, 172), fur)
    for x, y, r in [(40, 140, 10), (176, 120, 7), (168, 196, 8)]:  # sparkles of triumph
        star = [
            (x + math.cos(a) * (r if i % 2 == 0 else r / 3), y + math.sin(a) * (r if i % 2 == 0 else r / 3))
            for i, a in enumerate(math.pi / 4 * k for k in range(8))
        ]
        pen.polygon(star, (255, 214, 60, 255), outline=None)
    return _finish(image, (STICKER, STICKER))


def draw_hedgehog_leaves() -> Image.Image:
    image = _canvas((STICKER, STICKER))
    pen = Pen(image)
    leaf_colours = [(214, 96, 36, 255), (232, 160, 40, 255), (176, 58, 36, 255), (200, 130, 50, 255)]

    def leaf(x: float, y: float, angle: float, size: float, colour) -> None:
        points = []
        for t in range(0, 360, 30):
            rad = math.radians(t)
            r = size * (0.5 + 0.5 * abs(math.cos(rad)))
            px, py = math.cos(rad) * r, math.sin(rad) * r * 0.55
            points.append(
                (
                    x + px * math.cos(angle) - py * math.sin(angle),
                    y + px * math.sin(angle) + py * math.cos(angle),
                )
            )
        pen.polygon(points, colour, outline=(110, 50, 20, 255), width=1.5)
        pen.line(
            [
                (x - size * math.cos(angle), y - size * math.sin(angle)),
                (x + size * math.cos(angle), y + size * math.sin(angle)),
            ],
            (110, 50, 20, 255),
            1.5,
        )

    for i in range(22):  # the pile under the hedgehog
        x = 30 + (i * 47) % 200
        y = 196 + (i * 13) % 40
        leaf(x, y, (i * 0.9) % math.pi, 22 + (i % 3) * 5, leaf_colours[i % 4])
    spine, spine_dark = (120, 88, 60, 255), (80, 56, 38, 255)
    cx, cy = 118, 150
    for k in range(40):  # the spines, radiating from the curled back
        a = math.pi * (0.95 + 1.1 * k / 39)
        base = (cx + math.cos(a) * 70, cy + math.sin(a) * 56)
        tip = (cx + math.cos(a) * 96, cy + math.sin(a) * 80)
        side = (math.cos(a + math.pi / 2) * 7, math.sin(a + math.pi / 2) * 7)
        pen.polygon(
            [(base[0] - side[0], base[1] - side[1]), tip, (base[0] + side[0], base[1] + side[1])],
            spine_dark if k % 2 else spine,
            outline=None,
        )
    pen.ellipse((cx - 76, cy - 62, cx + 76, cy + 58), spine)
    pen.ellipse((cx + 8, cy - 20, cx + 100, cy + 50), (226, 192, 150, 255))  # the face, tucked in
    pen.ellipse((cx + 90, cy + 6, cx + 106, cy + 20), INK, outline=None)  # nose
    pen.arc((cx + 30, cy - 4, cx + 50, cy + 12), 10, 170, INK, 3)  # one eye shut
    pen.ellipse((cx + 58, cy - 6, cx + 76, cy + 12), INK, outline=None)  # the other half open
    pen.rectangle((cx + 56, cy - 8, cx + 78, cy + 3), (226, 192, 150, 255))  # its drooping lid
    pen.line([(cx + 56, cy + 3), (cx + 78, cy + 3)], INK, 2.5)
    for i in range(6):
        leaf(40 + i * 36, 226 + (i % 2) * 10, i * 0.7, 20, leaf_colours[(i + 1) % 4])
    for x, y, s in [(196, 70, 10), (212, 50, 13), (230, 26, 16)]:  # z z z
        pen.line([(x, y), (x + s, y), (x, y + s), (x + s, y + s)], (90, 90, 120, 255), 2.5)
    return _finish(image, (STICKER, STICKER))


def draw_canal_morning() -> Image.Image:
    width, height = PHOTO
    image = _canvas(PHOTO, (214, 222, 226, 255))
    pen = Pen(image)
    for y in range(0, 150):  # a pale sky, warmer near the horizon
        t = y / 150
        colour = (int(196 + 40 * t), int(210 + 22 * t), int(224 + 4 * t), 255)
        pen.rectangle((0, y, width, y + 1), colour)
    pen.rectangle((0, 150, width, height), (92, 112, 116, 255))  # the water
    for y in range(156, height, 7):
        pen.line([(0, y), (width, y)], (110, 130, 134, 255), 1.5)
    # The stone bridge across the back, its arch over the water.
    stone = (150, 140, 126, 255)
    pen.rectangle((40, 70, 440, 156), stone, OUTLINE, 1.5)
    pen.rectangle((30, 62, 450, 72), (128, 120, 108, 255), OUTLINE, 1.5)
    for row, y in enumerate(range(78, 156, 12)):
        for x in range(40 + (row % 2) * 14, 440, 28):
            pen.rectangle((x, y, min(x + 28, 440), y + 12), None, (120, 112, 100, 255), 1)
    pen.ellipse((150, 86, 330, 226), (60, 74, 80, 255), OUTLINE, 1.5)
    pen.rectangle((150, 156, 330, 230), (92, 112, 116, 255))
    # The brick towpath on the right, running to the bridge.
    pen.polygon([(300, height), (width, height), (width, 150), (420, 150)], (164, 84, 62, 255), OUTLINE, 1.5)
    for i, y in enumerate(range(156, height, 10)):
        left = 420 - (y - 150) * (120 / (height - 150))
        for x in range(int(left) + (i % 2) * 8, width, 16):
            pen.line([(x, y), (x, y + 10)], (130, 62, 46, 255), 1)
        pen.line([(left, y), (width, y)], (130, 62, 46, 255), 1)
    # The narrowboat, moored along the towpath: a long dark-green hull, red trim, a cabin with windows.
    hull = [(74, 236), (364, 236), (406, 224), (400, 262), (86, 266)]
    pen.polygon(hull, (34, 76, 52, 255), OUTLINE, 2)
    pen.line([(78, 240), (394, 240)], (186, 40, 40, 255), 4)
    pen.line([(82, 256), (396, 250)], (224, 180, 60, 255), 2.5)
    pen.rectangle((118, 196, 350, 236), (40, 92, 62, 255), OUTLINE, 2)
    pen.rectangle((114, 190, 354, 198), (186, 40, 40, 255), OUTLINE, 1.5)
    for x in range(134, 334, 34):
        pen.rounded((x, 206, x + 20, 222), 4, (236, 222, 160, 255), OUTLINE, 1.5)
    pen.rectangle((320, 176, 326, 192), (30, 30, 30, 255))  # the chimney
    pen.line([(406, 224), (444, 196)], (90, 70, 50, 255), 2)  # the mooring rope to the towpath
    reflection = Image.new("RGBA", image.size, (0, 0, 0, 0))
    Pen(reflection).rectangle((78, 268, 400, 300), (24, 56, 40, 110))
    image.alpha_composite(reflection.filter(ImageFilter.GaussianBlur(6 * SCALE)))
    # Early morning mist lying on the water and softening the bridge.
    mist = Image.new("RGBA", image.size, (0, 0, 0, 0))
    mist_pen = Pen(mist)
    for y, alpha in [(140, 150), (168, 120), (196, 90), (120, 70)]:
        mist_pen.ellipse((-60, y - 16, width + 60, y + 16), (240, 244, 246, alpha), outline=None)
    image.alpha_composite(mist.filter(ImageFilter.GaussianBlur(10 * SCALE)))
    return _finish(image, PHOTO).convert("RGB")


def draw_favicon() -> Image.Image:
    size = 64
    image = _canvas((size, size))
    pen = Pen(image)
    pen.rounded((2, 2, 62, 62), 14, (74, 52, 150, 255), outline=None)
    pen.arc((14, 14, 50, 50), 45, 315, (255, 255, 255, 255), 8)
    pen.ellipse((42, 16, 52, 26), (255, 208, 90, 255), outline=None)  # a spark: the persona's voice
    return _finish(image, (size, size))


PICTURES: dict[str, Callable[[], Image.Image]] = {
    "AgADBrGnWave01": draw_gnome_waving,
    "AgADBrGnShroom2": draw_gnome_mushroom,
    "AgADFoFrAcorn04": draw_squirrel_acorn,
    "AgADFoFrHedge03": draw_hedgehog_leaves,
    "AgADCanalPhoto5": draw_canal_morning,
}


def main() -> None:
    for unique_id, draw in PICTURES.items():
        target = MEDIA / f"{unique_id}.png"
        draw().save(target, optimize=True)
        print(f"wrote {target.relative_to(ROOT)}")
    FAVICON.parent.mkdir(parents=True, exist_ok=True)
    draw_favicon().save(FAVICON, sizes=[(16, 16), (32, 32), (48, 48), (64, 64)])
    print(f"wrote {FAVICON.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
