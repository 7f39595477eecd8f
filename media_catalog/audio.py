"""Reading audio and video files with PyAV (FFmpeg's libraries, carried in its wheel): a voice note's
duration, and what kind of file it is."""

from __future__ import annotations

import logging
from pathlib import Path

from media_catalog.parts import MediaItem

logger = logging.getLogger(__name__)

#: The first bytes of an Ogg container (Telegram's voice notes are Opus in Ogg).
OGG_MAGIC = b"OggS"


def is_ogg(head: bytes) -> bool:
    return head.startswith(OGG_MAGIC)


def media_duration(path: Path | str, *, audio: bool = False) -> float | None:
    """The length in seconds of an audio or video file, or None when it cannot be read (with
    `audio`, also when it has no audio stream: a picture or a silent clip has nothing to hear).

    The container's duration when it states one, else the last packet's end on the first audio or
    video stream (an Ogg file written without a duration in its header).
    """
    import av  # imported on use: only the processes that read audio load FFmpeg's libraries

    try:
        with av.open(str(path)) as container:
            if audio and not container.streams.audio:
                return None
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


def is_transcribable(item: MediaItem) -> bool:
    """A voice note, an audio file or a video note (Telegram's round video: kind video, `round`)."""
    return item.media_kind in AUDIO_KINDS or (item.media_kind == "video" and item.is_round)


def audio_kind(item: MediaItem) -> str:
    """The catalog kind of a transcribable part: a round video is a video note."""
    kind = item.media_kind or "audio"
    return "video_note" if kind == "video" else kind


def part_duration(item: MediaItem) -> float | None:
    return float(item.duration) if item.duration is not None else None


def too_long(item: MediaItem, duration: float | None = None) -> bool:
    """Past the cap: never transcribed (nor downloaded), the history says so instead."""
    seconds = duration if duration is not None else part_duration(item)
    return seconds is not None and seconds > MAX_AUDIO_SECONDS
