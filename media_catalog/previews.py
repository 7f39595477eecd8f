"""Reading sticker files safely: bounded TGS unpacking, notices, and media types sniffed from bytes.

A TGS file is gzip-compressed Lottie JSON. rlottie (through rlottie-python, which ships the native
library in its wheel, so it works offline) renders it in `media_catalog/lottie_render.py`, for the
admin's previews (one frame) and the media model (a few).

Stickers come from other people, so a file can be a gzip bomb: a few hundred KB that unpack to
gigabytes. Decompression is bounded (`zlib.decompressobj(...).decompress(data, max_length)`), and
anything that would unpack past `MAX_LOTTIE_BYTES` is refused with `PreviewTooLarge` before more
memory is spent; the admin then shows a "too large to preview" badge instead of a frame. What the
animation would cost to render is measured before rendering, and frames are rendered in a child
process with memory and time limits (`media_catalog/lottie_render.py`).
"""

from __future__ import annotations

import io
import zlib

PREVIEW_SIZE = 256
MAX_TGS_BYTES = 1024 * 1024  # Telegram caps TGS stickers at 64 KB; anything far larger is not one
MAX_LOTTIE_BYTES = 8 * MAX_TGS_BYTES  # what a TGS file may unpack to
GZIP_MAGIC = b"\x1f\x8b"


class PreviewError(Exception):
    pass


class PreviewTooLarge(PreviewError):
    """The file, or what it unpacks to, is larger than a sticker can be: no preview is rendered."""


def unpack_tgs(data: bytes, *, max_bytes: int = MAX_LOTTIE_BYTES) -> bytes:
    """The Lottie JSON bytes of a TGS file (or plain JSON as is), never more than `max_bytes`."""
    if len(data) > MAX_TGS_BYTES:
        raise PreviewTooLarge(f"{len(data)} bytes is too large for a TGS sticker (at most {MAX_TGS_BYTES})")
    if data[:2] != GZIP_MAGIC:
        return data
    # wbits=31: gzip framing. max_length stops inflating one byte past the limit.
    inflater = zlib.decompressobj(wbits=31)
    try:
        raw = inflater.decompress(data, max_bytes + 1)
    except zlib.error as exc:
        raise PreviewError(f"not a TGS file: {exc}") from None
    if len(raw) > max_bytes:
        raise PreviewTooLarge(f"the animation unpacks to more than {max_bytes // (1024 * 1024)} MB")
    if not inflater.eof:
        raise PreviewError("not a TGS file: the gzip data is truncated")
    return raw


def notice_png(text: str, *, size: int = PREVIEW_SIZE) -> bytes:
    """A badge-like PNG with a short notice, shown where a refused preview would have been."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (size, size // 4), (255, 244, 229, 255))
    draw = ImageDraw.Draw(image)
    draw.rectangle([0, 0, size - 1, size // 4 - 1], outline=(204, 102, 0, 255), width=2)
    draw.text((8, size // 8 - 6), text, fill=(153, 51, 0, 255))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


# First bytes of the media types the admin and the dashboard serve inline: (signature, offset, mime).
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"\x1a\x45\xdf\xa3", 0, "video/webm"),
    (b"ftyp", 4, "video/mp4"),
)


def sniff_media(head: bytes) -> str | None:
    """The media type a file's first 16 bytes show (PNG, JPEG, GIF, WebP, WebM, MP4), else None."""
    for signature, offset, mime in _SIGNATURES:
        if head[offset : offset + len(signature)] == signature:
            if mime == "image/webp" and head[:4] != b"RIFF":
                continue
            return mime
    return None
