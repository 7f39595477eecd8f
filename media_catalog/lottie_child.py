"""The child process that renders Lottie frames, under memory and CPU limits it sets on itself first.

Run as `python -I lottie_child.py '<json options>'` with the Lottie JSON on stdin (see
`media_catalog.lottie_render`, which starts it). It imports only the standard library until its
limits are set, then rlottie and Pillow, so a renderer that blows up takes only this process down.

Options: `count` (frames spread evenly over the animation), `size` (pixels a side), `on_white`
(composite onto white and encode RGB, else keep transparency), `memory` (bytes of address space,
RLIMIT_AS), `cpu` (seconds, RLIMIT_CPU).

Output on stdout: for each frame, its PNG length as 4 bytes big-endian, then the PNG. Exit codes:
`EXIT_NOT_LOTTIE` (stderr says why), `EXIT_MEMORY` (MemoryError); any other failure is a traceback.
"""

from __future__ import annotations

import io
import json
import resource
import struct
import sys

EXIT_NOT_LOTTIE = 2
EXIT_MEMORY = 3


def frame_indices(total: int, count: int) -> list[int]:
    """`count` frame numbers spread evenly over `total` frames, first and last included, no repeats."""
    if total <= 0 or count <= 0:
        return []
    if count == 1 or total == 1:
        return [0]
    picked = [round(i * (total - 1) / (count - 1)) for i in range(count)]
    return list(dict.fromkeys(picked))


def _limit(kind: int, value: int) -> None:
    _soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value if kind == resource.RLIMIT_AS else value + 1))


def render(raw: bytes, *, count: int, size: int, on_white: bool) -> list[bytes]:
    from PIL import Image
    from rlottie_python import LottieAnimation

    try:
        animation = LottieAnimation.from_data(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LookupError(f"not a TGS file: {exc}") from None
    total = animation.lottie_animation_get_totalframe() if animation is not None else 0
    if total <= 0:
        raise LookupError("not a Lottie animation (it has no frames)")
    frames = []
    for number in frame_indices(total, count):
        image = animation.render_pillow_frame(frame_num=number, width=size, height=size)
        if on_white:
            flat = Image.new("RGB", image.size, (255, 255, 255))
            flat.paste(image, mask=image.getchannel("A") if image.mode == "RGBA" else None)
            image = flat
        out = io.BytesIO()
        image.save(out, format="PNG")
        frames.append(out.getvalue())
    return frames


def main(argv: list[str]) -> int:
    options = json.loads(argv[1])
    _limit(resource.RLIMIT_AS, int(options["memory"]))
    _limit(resource.RLIMIT_CPU, int(options["cpu"]))
    raw = sys.stdin.buffer.read()
    try:
        frames = render(
            raw, count=int(options["count"]), size=int(options["size"]), on_white=options["on_white"]
        )
    except LookupError as exc:
        sys.stderr.write(str(exc))
        return EXIT_NOT_LOTTIE
    except MemoryError:
        return EXIT_MEMORY
    out = sys.stdout.buffer
    for frame in frames:
        out.write(struct.pack(">I", len(frame)))
        out.write(frame)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
