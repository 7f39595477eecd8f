"""Reading audio and video files with PyAV (FFmpeg's libraries, carried in its wheel): a voice note's
duration, and what kind of file it is."""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)

#: The first bytes of an Ogg container (Telegram's voice notes are Opus in Ogg).
OGG_MAGIC = b"OggS"


def is_ogg(head: bytes) -> bool:
    return head.startswith(OGG_MAGIC)


def media_duration(path: Path | str) -> float | None:
    """The length in seconds of an audio or video file, or None when it cannot be read.

    The container's duration when it states one, else the last packet's end on the first audio or
    video stream (an Ogg file written without a duration in its header).
    """
    import av  # imported on use: only the processes that read audio load FFmpeg's libraries

    try:
        with av.open(str(path)) as container:
            if container.duration:
                return container.duration / av.time_base
            stream = next(iter(container.streams.audio), None) or next(iter(container.streams.video), None)
            if stream is None:
                return None
            end = 0.0
            for packet in container.demux(stream):
                if packet.pts is not None and packet.duration is not None and stream.time_base:
                    end = max(end, float((packet.pts + packet.duration) * stream.time_base))
            return end or None
    except (av.FFmpegError, OSError, ValueError) as exc:
        logger.info("could not read the duration of %s: %s", path, exc)
        return None


#: The original's cap: audio longer than this is not sent to a model (5 minutes).
MAX_AUDIO_SECONDS = 300
#: Media kinds heard rather than seen: a model transcribes them.
AUDIO_KINDS = ("voice", "audio", "video_note")


def is_transcribable(part: dict) -> bool:
    """A voice note, an audio file or a video note (Telegram's round video: kind video, `round`)."""
    kind = part.get("media_kind")
    return kind in AUDIO_KINDS or (kind == "video" and bool((part.get("extra") or {}).get("round")))


def audio_kind(part: dict) -> str:
    """The catalog kind of a transcribable part: a round video is a video note."""
    kind = part.get("media_kind") or "audio"
    return "video_note" if kind == "video" else kind


def part_duration(part: dict) -> float | None:
    value = part.get("duration")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def too_long(part: dict, duration: float | None = None) -> bool:
    """Past the cap: never transcribed (nor downloaded), the history says so instead."""
    seconds = duration if duration is not None else part_duration(part)
    return seconds is not None and seconds > MAX_AUDIO_SECONDS
