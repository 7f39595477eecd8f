"""Length caps on media descriptions: a video past its cap is not described.

Describing a long video costs much and says little. As in the original (MEDIA_VIDEO_MAX_DURATION_SECONDS,
10 s by default), videos, GIFs and animations longer than `MEDIA_VIDEO_MAX_DURATION_SECONDS` are neither
downloaded nor sent to the media model (a video note is heard, not seen: it is transcribed up to the
audio cap of 5 minutes, `media_catalog.audio`); the history shows a note instead, e.g.
"‹a video of 12 min: too long to describe›". The note follows the setting as it is now, so raising the
cap lets the next turn describe the video.
"""

from __future__ import annotations

from cindy_site.parameters import parameter
from media_catalog.audio import is_transcribable
from media_catalog.parts import MediaItem

#: Media kinds the video cap applies to (a video note is a video part with `extra.round`).
VIDEO_KINDS = frozenset({"video", "video_note", "animation", "gif"})


def _length(seconds: float) -> str:
    """`12 min`, `1 h 5 min`, `45 s`: a duration as a person says it."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def video_kind(item: MediaItem) -> str:
    """What the part is, in words: "a video note" for a round video, else its kind with its article."""
    kind = item.media_kind
    if kind == "video_note" or (kind == "video" and item.is_round):
        return "a video note"
    return {"gif": "a GIF", "animation": "an animation"}.get(kind, f"a {kind}")


def video_too_long(item: MediaItem) -> str | None:
    """The history's note for a video part longer than the cap ("a video of 12 min: too long to
    describe"), or None when the part is not a video or is within the cap (or its length is unknown)."""
    if item.media_kind not in VIDEO_KINDS or is_transcribable(item) or item.duration is None:
        return None
    duration = item.duration
    cap = parameter("MEDIA_VIDEO_MAX_DURATION_SECONDS")
    if duration <= cap:
        return None
    return f"{video_kind(item)} of {_length(duration)}: too long to describe"
