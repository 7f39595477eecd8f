"""Telegram Desktop exports in the shapes its JSON writer produces, for the importchat tests.

Each builder returns plain JSON values; `write_export` stores them as Telegram Desktop does (UTF-8,
indented). Dates come in pairs as in real exports: `date` in the exporting machine's local time
(here UTC+02:00, so the two differ) and `date_unixtime` as a string of seconds.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

#: Ann, the other side of the personal chat, and the agent's own account.
ANN_ID = 5550001
AGENT_ID = 7770001
SKIPPED = "(File not included. Change data exporting settings to download.)"
_LOCAL = dt.timezone(dt.timedelta(hours=2))


def stamp(at: dt.datetime) -> dict[str, str]:
    """`date` and `date_unixtime` for an instant, as the exporter writes them."""
    return {
        "date": at.astimezone(_LOCAL).replace(tzinfo=None).isoformat(),
        "date_unixtime": str(int(at.timestamp())),
    }


def at(minute: int) -> dt.datetime:
    return dt.datetime(2024, 5, 1, 16, 0, tzinfo=dt.UTC) + dt.timedelta(minutes=minute)


def message(
    message_id: int, *, sender: int = ANN_ID, name: str = "Ann", minute: int | None = None, **fields
) -> dict:
    """A plain message from `sender` ("user<id>"), its text and media given as `fields`."""
    return {
        "id": message_id,
        "type": "message",
        **stamp(at(message_id if minute is None else minute)),
        "from": name,
        "from_id": f"user{sender}",
        **fields,
    }


def service(message_id: int, action: str, *, actor: int = ANN_ID, **fields) -> dict:
    return {
        "id": message_id,
        "type": "service",
        **stamp(at(message_id)),
        "actor": "Ann",
        "actor_id": f"user{actor}",
        "action": action,
        "text": "",
        "text_entities": [],
        **fields,
    }


def every_shape() -> list[dict[str, Any]]:
    """One message of each shape the importer reads, ids 1 to 17."""
    mine = {"sender": AGENT_ID, "name": "Wendy"}
    return [
        message(1, text="Hi Wendy! Did the tomatoes come up?", text_entities=[{"type": "plain", "text": "Hi"}]),
        message(
            2,
            **mine,
            text=["They did! ", {"type": "bold", "text": "Twelve"}, " plants, see ", {"type": "link", "text": "https://example.org"}],
        ),
        message(3, text_entities=[{"type": "plain", "text": "only "}, {"type": "italic", "text": "entities"}]),
        service(4, "phone_call", duration_seconds=65, discard_reason="hangup"),
        message(5, photo=SKIPPED, width=1280, height=960, text="the greenhouse"),
        message(6, file=SKIPPED, media_type="sticker", sticker_emoji="🍅", width=512, height=512, text=""),
        message(7, file="voice_messages/audio_1.ogg", media_type="voice_message", mime_type="audio/ogg", duration_seconds=4, text=""),
        message(8, **mine, file=SKIPPED, media_type="video_message", mime_type="video/mp4", duration_seconds=9, text=""),
        message(9, file="video_files/garden.mp4", media_type="video_file", mime_type="video/mp4", duration_seconds=30, text="look"),
        message(10, file=SKIPPED, media_type="animation", mime_type="video/mp4", text=""),
        message(11, file="files/song.mp3", media_type="audio_file", mime_type="audio/mpeg", performer="Nina", title="Feeling Good", text=""),
        message(12, file="files/seeds.pdf", mime_type="application/pdf", text="the seed list"),
        message(13, forwarded_from="Garden Weekly", text="Slugs hate copper tape"),
        message(14, **mine, reply_to_message_id=13, text="Good tip about the copper tape",
                edited="2024-05-01T18:20:00", edited_unixtime=str(int(at(20).timestamp()))),
        {"id": 15, "type": "unsupported"},  # as Telegram Desktop writes one: no date, no sender
        message(16, text=""),
        service(17, "edit_group_title", title="Gardeners"),
    ]  # fmt: skip


def single_chat(
    messages: list[dict], *, name: str = "Ann", chat_type: str = "personal_chat", chat_id: int = ANN_ID
) -> dict:
    return {"name": name, "type": chat_type, "id": chat_id, "messages": messages}


def full_export(chats: list[dict], *, account: int | None = AGENT_ID) -> dict:
    data: dict[str, Any] = {"about": "Here is the data you requested."}
    if account is not None:
        data["personal_information"] = {
            "user_id": account,
            "first_name": "Wendy",
            "last_name": "",
            "phone_number": "+1 555 0000",
        }
    data["chats"] = {"about": "This page lists all chats from this export.", "list": chats}
    return data


def write_export(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
    return path
