"""Animated (TGS) stickers as input a media model takes: a few frames of the animation as PNG images.

A TGS file is gzip-compressed Lottie JSON, which no model accepts. The original turned it into a short
MP4 clip (4 frames a second) with system libraries (cairo, ffmpeg); here rlottie (already used for the
admin's previews, native library in its wheel) renders `MEDIA_TGS_FRAMES` frames spread evenly from
the first to the last, each composited onto white (as the original's clip was) and encoded as PNG.
Every provider that describes photos takes them, and a handful of small images costs less than a clip.

Unpacking is bounded as for previews (`media_catalog.previews.unpack_tgs`): a gzip bomb is refused.
"""

from __future__ import annotations

import io

from media_catalog.parts import MediaItem
from media_catalog.previews import PreviewError, unpack_tgs

TGS_MIME = "application/x-tgsticker"
FRAME_SIZE = 256
FRAME_MIME = "image/png"


class TgsRenderError(Exception):
    """The file is not a TGS animation that can be rendered (the message says why)."""


def is_tgs(item: MediaItem, head: bytes) -> bool:
    """Whether a media part is an animated sticker: by its MIME type, its sticker format, or (a sticker
    whose MIME type is missing) by the gzip signature of its first bytes."""
    mime = item.mime.lower()
    if mime in (TGS_MIME, "application/gzip"):
        return True
    if item.sticker_format == "animated":
        return True
    return item.media_kind == "sticker" and not mime and head[:2] == b"\x1f\x8b"


def frame_indices(total: int, count: int) -> list[int]:
    """`count` frame numbers spread evenly over `total` frames, first and last included, no repeats."""
    if total <= 0 or count <= 0:
        return []
    if count == 1 or total == 1:
        return [0]
    picked = [round(i * (total - 1) / (count - 1)) for i in range(count)]
    return list(dict.fromkeys(picked))


def tgs_frames(data: bytes, *, count: int, size: int = FRAME_SIZE) -> list[bytes]:
    """PNG images (size x size, on white) of `count` frames of a TGS animation, in order."""
    from PIL import Image
    from rlottie_python import LottieAnimation

    try:
        raw = unpack_tgs(data)
    except PreviewError as exc:
        raise TgsRenderError(str(exc)) from None
    try:
        animation = LottieAnimation.from_data(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TgsRenderError(f"not a TGS file: {exc}") from None
    total = animation.lottie_animation_get_totalframe() if animation is not None else 0
    if total <= 0:
        raise TgsRenderError("not a Lottie animation (it has no frames)")
    frames = []
    for number in frame_indices(total, count):
        image = animation.render_pillow_frame(frame_num=number, width=size, height=size)
        flat = Image.new("RGB", image.size, (255, 255, 255))
        flat.paste(image, mask=image.getchannel("A") if image.mode == "RGBA" else None)
        out = io.BytesIO()
        flat.save(out, format="PNG")
        frames.append(out.getvalue())
    return frames
