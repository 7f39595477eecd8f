"""Small real images for the stand-in's photo and stickers (decodable by any image library)."""

from __future__ import annotations

import io

from PIL import Image, ImageDraw


def image_bytes(text: str, *, size: tuple[int, int], color: str, fmt: str) -> bytes:
    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).text((size[0] // 4, size[1] // 2), text, fill="white")
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def populate(world) -> None:
    """The media every stand-in starts with: the sticker set "CindyStandIn" and one photo."""
    world.add_sticker_set(
        "CindyStandIn",
        "Cindy stand-in stickers",
        [
            ("😀", image_bytes("smile", size=(512, 512), color="orange", fmt="WEBP")),
            ("👍", image_bytes("thumbs up", size=(512, 512), color="teal", fmt="WEBP")),
        ],
    )
    world.photo = world.add_photo(
        image_bytes("a red square", size=(320, 240), color="red", fmt="JPEG"), width=320, height=240
    )
