"""Animated (TGS) stickers as input a media model takes: a few frames of the animation as PNG images.

A TGS file is gzip-compressed Lottie JSON, which no model accepts. The original turned it into a short
MP4 clip (4 frames a second) with system libraries (cairo, ffmpeg); here rlottie (already used for the
admin's previews, native library in its wheel) renders `MEDIA_TGS_FRAMES` frames spread evenly from
the first to the last, each composited onto white (as the original's clip was) and encoded as PNG.
Every provider that describes photos takes them, and a handful of small images costs less than a clip.

Unpacking is bounded as for previews (`media_catalog.previews.unpack_tgs`): a gzip bomb is refused.
What the animation would cost is measured before rendering (layers through precompositions, frames,
frame rate, size: `CINDY_TGS_MAX_*`), and rendering runs in a child process with memory and time
limits (`media_catalog.lottie_render`); a refused or failed sticker is `TgsRenderError`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from media_catalog.lottie_child import frame_indices
from media_catalog.lottie_render import RenderLimits, RenderTimedOut, render_tgs
from media_catalog.parts import MediaItem
from media_catalog.previews import MAX_TGS_BYTES, PreviewError

TGS_MIME = "application/x-tgsticker"
FRAME_SIZE = 256
FRAME_MIME = "image/png"

__all__ = [
    "FRAME_MIME",
    "TGS_MIME",
    "TgsRenderError",
    "TgsRenderTimedOut",
    "frame_indices",
    "is_tgs",
    "read_tgs",
    "tgs_frames",
]


class TgsRenderError(Exception):
    """The file is not a TGS animation that can be rendered (the message says why)."""


class TgsRenderTimedOut(TgsRenderError):
    """Rendering took longer than it was given (which may be less than the setting: see `tgs_frames`)."""


def is_tgs(item: MediaItem, head: bytes) -> bool:
    """Whether a media part is an animated sticker, by what Telegram says it is: the sticker MIME type,
    the animated sticker format, or (a sticker whose MIME type is missing) the gzip signature of its
    first bytes. Any other gzip file is a document like any other, never rendered as a sticker."""
    if item.mime.lower() == TGS_MIME or item.sticker_format == "animated":
        return True
    return item.media_kind == "sticker" and not item.mime and head[:2] == b"\x1f\x8b"


def read_tgs(path: Path) -> bytes:
    """A sticker file's bytes, refused unread (`TgsRenderError`) when it is larger than a TGS sticker
    can be (`media_catalog.previews.MAX_TGS_BYTES`): a 100 MB "sticker" never reaches memory."""
    size = path.stat().st_size
    if size > MAX_TGS_BYTES:
        raise TgsRenderError(
            f"{size} bytes is too large for a TGS sticker (at most {MAX_TGS_BYTES}); not read"
        )
    return path.read_bytes()


def tgs_frames(data: bytes, *, count: int, size: int = FRAME_SIZE, seconds: int | None = None) -> list[bytes]:
    """PNG images (size x size, on white) of `count` frames of a TGS animation, in order; measured
    first and rendered in a child process with limits (`media_catalog.lottie_render`), given at most
    `seconds` when that is less than CINDY_TGS_RENDER_SECONDS."""
    limits = RenderLimits.from_settings()
    if seconds is not None and seconds < limits.seconds:
        limits = replace(limits, seconds=max(1, seconds))
    try:
        frames = render_tgs(data, count=count, size=size, on_white=True, render_limits=limits)
    except RenderTimedOut as exc:
        raise TgsRenderTimedOut(str(exc)) from None
    except PreviewError as exc:
        raise TgsRenderError(str(exc)) from None
    if not frames:
        raise TgsRenderError("not a Lottie animation (it has no frames)")
    return frames
