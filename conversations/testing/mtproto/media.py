"""Small real images for the stand-in's photo and stickers (decodable by any image library)."""

from __future__ import annotations

import io
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
