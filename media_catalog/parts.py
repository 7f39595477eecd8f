"""A media part of a message, typed: what `Message.media` holds as JSON, read through `MediaItem`.

The transports build `MediaItem`s from Telegram's (or the sandbox's) objects and ingest stores them
with `to_part()`; the gateway then adds its download to the stored part, which `StoredMedia` reads.
Every reader turns a stored part into one with `from_part` (or a message's parts with `media_items`),
which checks each field's type once and names the field it refuses, so the rest of the code reads
attributes instead of string keys. The catalog owns the types because their kinds (`MediaKind`) and
their key (`unique_id`) are the catalog's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any


class MediaPartError(ValueError):
    """A stored media part that is not one: the message names the field and what it holds."""

    def __init__(self, name: str, value: Any, expected: str) -> None:
        self.field = name
        super().__init__(f'media part field "{name}" is {value!r}: expected {expected}')


@dataclass(frozen=True)
class MediaItem:
    """One piece of media in a message, normalised.

    `media_kind` is a `media_catalog.models.MediaKind` value. `unique_id` is Telegram's stable
    file unique id, the key of the media catalog.
    """

    media_kind: str
    unique_id: str = ""
    mime: str = ""
    sticker_set_name: str = ""
    sticker_set_title: str = ""
    sticker_name: str = ""
    sticker_format: str = ""  # static | animated | video
    duration: float | None = None
    file_name: str = ""
    size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def is_round(self) -> bool:
        """A round video (Telegram's video note sent as kind video with `round`)."""
        return bool(self.extra.get("round"))

    @property
    def transcript(self) -> str:
        """What an agent's own voice note says (kept in `extra` when it was sent)."""
        return str(self.extra.get("transcript") or "")

    def to_part(self) -> dict[str, Any]:
        """The JSON part stored in `Message.media`."""
        return {"kind": "media", **{k: v for k, v in asdict(self).items() if v not in ("", None, {})}}

    @classmethod
    def from_part(cls, part: Mapping[str, Any]) -> MediaItem:
        """The part as a `MediaItem`; keys it does not know (the stored "kind", renderings) are left out.

        Raises `MediaPartError` naming the first field whose value has the wrong type.
        """
        if not isinstance(part, Mapping):
            raise MediaPartError("part", part, "an object")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in part or part[f.name] is None:
                continue
            values[f.name] = _checked(f.name, part[f.name])
        values.setdefault("media_kind", "")  # readers choose their own word for an unnamed kind
        return cls(**values)


@dataclass(frozen=True)
class StoredMedia(MediaItem):
    """A part as `Message.media` keeps it: the transport's item, and what the gateway added after
    ingest, the downloaded copy (`file`, relative to MEDIA_ROOT) or why there is none.

    A transport's own part may name a `file` of its own (the sandbox's upload): `MediaItem.from_part`
    leaves it out, so that ingest stores no download that the gateway did not make.
    """

    file: str = ""
    download_error: str = ""

    @property
    def stored_file(self) -> str:
        """The downloaded copy: the gateway's `file`, or the one a send of the agent's kept in `extra`."""
        return self.file or str(self.extra.get("file") or "")


def media_items(parts: Iterable[Mapping[str, Any]] | None) -> list[StoredMedia]:
    """A message's stored parts (`Message.media`, possibly empty or None), typed."""
    return [StoredMedia.from_part(part) for part in parts or ()]


def _checked(name: str, value: Any) -> Any:
    if name == "duration":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise MediaPartError(name, value, "a number of seconds")
        return value
    if name == "size":
        if isinstance(value, bool) or not isinstance(value, int):
            raise MediaPartError(name, value, "a whole number of bytes")
        return value
    if name == "extra":
        if not isinstance(value, dict):
            raise MediaPartError(name, value, "an object")
        return value
    if name == "unique_id" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # Telegram's ids are numbers; the catalog keys them as text
    if not isinstance(value, str):
        raise MediaPartError(name, value, "text")
    return value
