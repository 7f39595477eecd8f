"""Small real media for the stand-in: images for its photo and stickers (decodable by any image
library), and voice and video notes as Telegram's clients send them (documents with an audio or a
round video attribute)."""

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


def nested_precomp_lottie(*, levels: int = 10, fan: int = 10) -> dict:
    """A hostile Lottie animation: `levels` precompositions of `fan` layers, each layer of a level
    referring to the level below, so the renderer would build fan ** levels layers from a few
    hundred bytes (the red team's 624-byte sticker was ten levels of ten)."""
    shape = {
        "ty": "rc",
        "d": 1,
        "s": {"a": 0, "k": [8, 8]},
        "p": {"a": 0, "k": [0, 0]},
        "r": {"a": 0, "k": 0},
    }
    fill = {"ty": "fl", "c": {"a": 0, "k": [1, 0, 0, 1]}, "o": {"a": 0, "k": 100}, "r": 1}
    leaf = {"ty": 4, "ip": 0, "op": 60, "st": 0, "ks": {}, "shapes": [shape, fill]}
    assets = [{"id": "p0", "layers": [leaf] * fan}]
    for level in range(1, levels):
        ref = {"ty": 0, "refId": f"p{level - 1}", "ip": 0, "op": 60, "st": 0, "w": 512, "h": 512, "ks": {}}
        assets.append({"id": f"p{level}", "layers": [ref] * fan})
    top = {"ty": 0, "refId": f"p{levels - 1}", "ip": 0, "op": 60, "st": 0, "w": 512, "h": 512, "ks": {}}
    return {"v": "5.5.2", "fr": 60, "ip": 0, "op": 60, "w": 512, "h": 512, "assets": assets, "layers": [top]}


def nested_precomp_tgs(**kwargs) -> bytes:
    """`nested_precomp_lottie(**kwargs)` as a TGS file: a few hundred bytes gzipped."""
    raw = json.dumps(nested_precomp_lottie(**kwargs), separators=(",", ":")).encode()
    return gzip.compress(raw, mtime=0)


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
    world: World,
    short_name: str,
    title: str,
    stickers: list[tuple[str, bytes]],
    *,
    mime: str = "image/webp",
    premium: tuple[str, ...] = (),
) -> types.StickerSet:
    """A sticker set of (emoji, bytes) stickers, 512x512 each: WebP by default, TGS with
    `mime="application/x-tgsticker"`. The stickers whose emoji are in `premium` are premium stickers,
    marked as Telegram marks them: a premium animation (a video size of type "f")."""
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
        animation = [types.VideoSize(type="f", w=512, h=512, size=len(data))] if alt in premium else None
        doc = types.Document(
            id=world.new_id(),
            access_hash=world.new_id(),
            file_reference=b"ref-1",
            date=int(time.time()),
            mime_type=mime,
            size=len(data),
            dc_id=world.dc_id,
            attributes=[
                types.DocumentAttributeImageSize(w=512, h=512),
                types.DocumentAttributeSticker(alt=alt, stickerset=ref),
                types.DocumentAttributeFilename(
                    file_name="sticker.tgs" if "tgsticker" in mime else "sticker.webp"
                ),
            ],
            video_thumbs=animation,
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


def sticker_document(world: World, short_name: str, alt: str) -> types.Document:
    """The document of the sticker `alt` in the stand-in's set `short_name`."""
    _set, docs = world.sticker_sets[short_name.lower()]
    return next(d for d in docs if any(getattr(a, "alt", None) == alt for a in d.attributes))


def save_to_saved_messages(world: World, user_id: int, document: types.Document):
    """The account keeps a document (e.g. a sticker) in its Saved Messages, its chat with itself."""
    message, _pts, _new = world.send(
        user_id, world.dm_key(user_id, user_id), "", media=types.MessageMediaDocument(document=document)
    )
    return message


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


def add_video(world: World, *, seconds: int, round_message: bool = False) -> types.Document:
    """A video (or, `round_message`, a video note) of `seconds` seconds. Its bytes are a stub: a video
    past the description cap is never downloaded."""
    data = b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 64
    attributes = [
        types.DocumentAttributeVideo(duration=seconds, w=384, h=384, round_message=round_message),
        types.DocumentAttributeFilename(file_name="video.mp4"),
    ]
    return _document(world, data, "video/mp4", attributes)


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
