"""Small real media for the stand-in: images for its photo and stickers (decodable by any image
library), and voice and video notes as Telegram's clients send them (documents with an audio or a
round video attribute)."""

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


def waveform(levels: list[int]) -> bytes:
    """Telegram's voice note waveform: levels 0..31, packed five bits each, least significant first."""
    bits = 0
    for index, level in enumerate(levels):
        bits |= (max(0, min(31, level)) & 31) << (5 * index)
    return bits.to_bytes((5 * len(levels) + 7) // 8, "little")


def _document(world: World, data: bytes, mime: str, attributes: list) -> types.Document:
    doc = types.Document(
        id=world.new_id(),
        access_hash=world.new_id(),
        file_reference=b"ref-1",
        date=int(time.time()),
        mime_type=mime,
        size=len(data),
        dc_id=world.dc_id,
        attributes=attributes,
    )
    world.documents[doc.id], world.files[doc.id] = doc, data
    return doc


def add_voice_note(world: World, data: bytes, *, duration: float) -> types.MessageMediaDocument:
    """A voice note (OGG/Opus bytes) as a message's media: `DocumentAttributeAudio(voice=True)` with its
    duration in whole seconds and a waveform, as Telegram's clients record one."""
    levels = [(i * 7) % 32 for i in range(100)]
    attribute = types.DocumentAttributeAudio(
        duration=max(1, round(duration)), voice=True, waveform=waveform(levels)
    )
    return types.MessageMediaDocument(document=_document(world, data, "audio/ogg", [attribute]), voice=True)


def add_video_note(world: World, data: bytes, *, duration: float, size: int) -> types.MessageMediaDocument:
    """A video note (a round MP4) as a message's media: `DocumentAttributeVideo(round_message=True)`."""
    attribute = types.DocumentAttributeVideo(
        duration=duration, w=size, h=size, round_message=True, supports_streaming=True
    )
    return types.MessageMediaDocument(document=_document(world, data, "video/mp4", [attribute]), round=True)


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
