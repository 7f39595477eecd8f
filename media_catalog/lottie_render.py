"""Render TGS (Lottie) frames safely: bounded before rendering, and rendered in a child process.

Every renderer of stickers (the media model's frames in `llm/media_tgs.py`, the admin's previews in
`media_catalog/previews.py`) goes through `render_tgs`, which:

1. unpacks the file within the size caps (`previews.unpack_tgs`: 1 MiB packed, 8 MiB unpacked);
2. measures the animation and refuses it past the `CINDY_TGS_MAX_*` limits (`lottie_budget`), so a
   few hundred bytes that expand to millions of layers never reach the renderer;
3. renders in a child process (`lottie_child.py`) that limits its own address space
   (`CINDY_TGS_RENDER_MEMORY_MB`, RLIMIT_AS) and CPU time, and is killed after
   `CINDY_TGS_RENDER_SECONDS`. A renderer that still blows up kills only the child; the caller gets
   `RenderFailed` saying which limit stopped it, never a dead worker.
"""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from media_catalog import lottie_child
from media_catalog.lottie_budget import LottieLimits, lottie_check
from media_catalog.previews import PREVIEW_SIZE, PreviewError, unpack_tgs

CHILD = Path(lottie_child.__file__)
#: What the child's stderr says when it ran into its address-space limit (Python, C++, the C library).
_OUT_OF_MEMORY = (b"MemoryError", b"bad_alloc", b"cannot allocate memory")


class RenderFailed(PreviewError):
    """The renderer process died or ran out of time or memory: the animation is not rendered."""


class RenderTimedOut(RenderFailed):
    """The renderer process took longer than it was given and was killed."""


@dataclass(frozen=True)
class RenderLimits:
    memory_mb: int = 512
    seconds: int = 20

    @classmethod
    def from_settings(cls) -> RenderLimits:
        from django.conf import settings

        return cls(memory_mb=settings.CINDY_TGS_RENDER_MEMORY_MB, seconds=settings.CINDY_TGS_RENDER_SECONDS)


def render_tgs(
    data: bytes,
    *,
    count: int,
    size: int,
    on_white: bool,
    limits: LottieLimits | None = None,
    render_limits: RenderLimits | None = None,
) -> list[bytes]:
    """PNG images of `count` frames of a TGS file (or plain Lottie JSON), spread evenly, in order."""
    raw = unpack_tgs(data)
    lottie_check(raw, limits)
    return render_in_child(raw, count=count, size=size, on_white=on_white, limits=render_limits)


def tgs_frame_png(data: bytes, *, size: int = PREVIEW_SIZE) -> bytes:
    """The first frame of a TGS (or plain Lottie JSON) animation as a PNG of size x size pixels,
    transparent around the drawing: the admin's preview."""
    frames = render_tgs(data, count=1, size=size, on_white=False)
    if not frames:
        raise PreviewError("not a Lottie animation")
    return frames[0]


def render_in_child(
    raw: bytes, *, count: int, size: int, on_white: bool, limits: RenderLimits | None = None
) -> list[bytes]:
    """Frames of Lottie JSON `raw` rendered by a child process within `limits` (no budget check)."""
    limits = limits or RenderLimits.from_settings()
    memory = limits.memory_mb * 1024 * 1024
    options = {"count": count, "size": size, "on_white": on_white, "memory": memory, "cpu": limits.seconds}
    try:
        done = subprocess.run(  # noqa: S603 (our own script, run by the interpreter running us)
            [sys.executable, "-I", str(CHILD), json.dumps(options)],
            input=raw,
            capture_output=True,
            timeout=limits.seconds,
            check=False,
        )
    except OSError as exc:
        raise RenderFailed(f"the renderer could not be started: {exc}") from None
    except subprocess.TimeoutExpired:
        raise RenderTimedOut(
            f"rendering took longer than {limits.seconds} s and was stopped (CINDY_TGS_RENDER_SECONDS)"
        ) from None
    if done.returncode == lottie_child.EXIT_NOT_LOTTIE:
        raise PreviewError(done.stderr.decode("utf-8", "replace").strip() or "not a Lottie animation")
    if done.returncode == lottie_child.EXIT_MEMORY or (
        done.returncode != 0 and any(sign in done.stderr for sign in _OUT_OF_MEMORY)
    ):
        raise RenderFailed(
            f"rendering needed more than {limits.memory_mb} MiB and was stopped (CINDY_TGS_RENDER_MEMORY_MB)"
        )
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise RenderFailed(
            f"the renderer died ({name}) within its limits of {limits.memory_mb} MiB and "
            f"{limits.seconds} s (CINDY_TGS_RENDER_MEMORY_MB, CINDY_TGS_RENDER_SECONDS)"
        )
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise RenderFailed(f"the renderer failed (exit {done.returncode}): {last[0][:300]}")
    return _frames(done.stdout)


def _frames(out: bytes) -> list[bytes]:
    frames, offset = [], 0
    while offset < len(out):
        (length,) = struct.unpack_from(">I", out, offset)
        frames.append(out[offset + 4 : offset + 4 + length])
        offset += 4 + length
    return frames
