"""Still images of animated TGS stickers for the admin's previews.

A TGS file is gzip-compressed Lottie JSON. rlottie (through rlottie-python, which ships the native
library in its wheel, so it works offline) renders one frame, and Pillow encodes it as PNG.
"""

from __future__ import annotations

import gzip
import io

PREVIEW_SIZE = 256
MAX_TGS_BYTES = 1024 * 1024  # Telegram caps TGS stickers at 64 KB; anything far larger is not one


class PreviewError(Exception):
    pass


def tgs_frame_png(data: bytes, *, size: int = PREVIEW_SIZE) -> bytes:
    """The first frame of a TGS (or plain Lottie JSON) animation as a PNG of size x size pixels."""
    from rlottie_python import LottieAnimation

    if len(data) > MAX_TGS_BYTES:
        raise PreviewError(f"{len(data)} bytes is too large for a TGS sticker")
    try:
        raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if len(raw) > 8 * MAX_TGS_BYTES:
            raise PreviewError("the animation unpacks to more than 8 MB")
        animation = LottieAnimation.from_data(raw.decode("utf-8"))
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise PreviewError(f"not a TGS file: {exc}") from None
    if animation is None or animation.lottie_animation_get_totalframe() <= 0:
        raise PreviewError("not a Lottie animation")
    image = animation.render_pillow_frame(frame_num=0, width=size, height=size)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
