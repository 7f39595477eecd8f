"""Small real images for the stand-in's photo and stickers (decodable by any image library)."""

from __future__ import annotations

import gzip
import io
import json
import time

from PIL import Image, ImageDraw
from telethon.tl import types

from .world import World


def image_bytes(text: str, *, size: tuple[int, int], color: str, fmt: str) -> bytes:
    image = Image.new("RGB", size, color)
    ImageDraw.Draw(image).text((size[0] // 4, size[1] // 2), text, fill="white")
    out = io.BytesIO()
    image.save(out, format=fmt)
    return out.getvalue()


def lottie_json(
    *, frames: int = 30, fps: int = 30, rgb: tuple[float, float, float] = (0.9, 0.2, 0.1)
) -> dict:
    """A small Lottie animation: one square sliding from left to right over `frames` frames."""

    def still(value):
        return {"a": 0, "k": value}

    square = {
        "ty": "gr",
        "it": [
            {"ty": "rc", "d": 1, "s": still([120, 120]), "p": still([0, 0]), "r": still(0)},
            {"ty": "fl", "c": still([*rgb, 1]), "o": still(100), "r": 1},
            {
                "ty": "tr",
                "p": still([0, 0]),
                "a": still([0, 0]),
                "s": still([100, 100]),
                "r": still(0),
                "o": still(100),
            },
        ],
    }
    slide = {
        "a": 1,
        "k": [
            {"t": 0, "s": [100, 256, 0], "i": {"x": [0.5], "y": [0.5]}, "o": {"x": [0.5], "y": [0.5]}},
            {"t": frames, "s": [412, 256, 0]},
        ],
    }
    layer = {
        "ddd": 0, "ind": 1, "ty": 4, "nm": "square", "sr": 1, "ip": 0, "op": frames, "st": 0,
        "ks": {"o": still(100), "r": still(0), "p": slide, "a": still([0, 0, 0]), "s": still([100, 100, 100])},
        "shapes": [square],
    }  # fmt: skip
    return {"v": "5.5.2", "fr": fps, "ip": 0, "op": frames, "w": 512, "h": 512, "nm": "slide", "ddd": 0,
            "assets": [], "layers": [layer], "tgs": 1}  # fmt: skip


def tgs_bytes(**kwargs) -> bytes:
    """A real TGS file (gzip-compressed Lottie JSON) of `lottie_json(**kwargs)`, a few hundred bytes."""
    return gzip.compress(json.dumps(lottie_json(**kwargs)).encode(), mtime=0)


def add_photo(world: World, data: bytes, *, width: int, height: int) -> types.Photo:
    photo = types.Photo(
        id=world.new_id(),
        access_hash=world.new_id(),
        file_reference=b"ref-1",
        date=int(time.time()),
        sizes=[types.PhotoSize(type="x", w=width, h=height, size=len(data))],
        dc_id=world.dc_id,
    )
    world.photos[photo.id], world.files[photo.id] = photo, data
    return photo


def add_sticker_set(
    world: World, short_name: str, title: str, stickers: list[tuple[str, bytes]]
) -> types.StickerSet:
    """A sticker set of (emoji, webp bytes) stickers, 512x512 each."""
    sticker_set = types.StickerSet(
        id=world.new_id(),
        access_hash=world.new_id(),
        title=title,
        short_name=short_name,
        count=len(stickers),
        hash=0,
    )
    ref = types.InputStickerSetID(id=sticker_set.id, access_hash=sticker_set.access_hash)
    docs = []
    for alt, data in stickers:
        doc = types.Document(
            id=world.new_id(),
            access_hash=world.new_id(),
            file_reference=b"ref-1",
            date=int(time.time()),
            mime_type="image/webp",
            size=len(data),
            dc_id=world.dc_id,
            attributes=[
                types.DocumentAttributeImageSize(w=512, h=512),
                types.DocumentAttributeSticker(alt=alt, stickerset=ref),
                types.DocumentAttributeFilename(file_name="sticker.webp"),
            ],
        )
        world.documents[doc.id], world.files[doc.id] = doc, data
        docs.append(doc)
    world.sticker_sets[short_name.lower()] = (sticker_set, docs)
    return sticker_set


def populate(world: World) -> None:
    """The media every stand-in starts with: the sticker set "CindyStandIn" and one photo."""
    add_sticker_set(
        world,
        "CindyStandIn",
        "Cindy stand-in stickers",
        [
            ("😀", image_bytes("smile", size=(512, 512), color="orange", fmt="WEBP")),
            ("👍", image_bytes("thumbs up", size=(512, 512), color="teal", fmt="WEBP")),
        ],
    )
    world.photo = add_photo(
        world, image_bytes("a red square", size=(320, 240), color="red", fmt="JPEG"), width=320, height=240
    )
