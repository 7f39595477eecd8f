"""One message of an export, checked field by field and read into an `ExportMessage`.

The shapes are Telegram Desktop's (its JSON writer): `id` a number; `type` "message", "service" or
"unsupported"; `date` the exporting machine's local time in ISO form and `date_unixtime` the instant
as a string of seconds (older exports lack it); `edited`/`edited_unixtime` likewise; `from` a name
(or null) and `from_id` "user123", "channel456" or "chat789" (a bare number in old exports); `text`
a string, or a list of strings and entity objects (`{"type": "bold", "text": "..."}`), with the
same parts as objects in `text_entities`; media as `photo` or `file` (a path inside the export, or
"(File not included. ...)" when it was left out) with `media_type`, `mime_type`, `sticker_emoji`,
`duration_seconds`; `reply_to_message_id`; `forwarded_from` a name. Service messages carry `action`,
`actor`, `actor_id` and, for some actions, `title`.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from cwimport.chatexport.reading import MAX_ID, ChatExportError, shown
from media_catalog.parts import MediaItem

#: The latest instant an export's date may name (2100-01-01), and the earliest (Telegram's launch year).
_LATEST = 4_102_444_800
_EARLIEST = 1_356_998_400
#: "Never edited" in older exports: the epoch, in the exporting machine's zone.
_EPOCH_SLACK = 2 * 86_400

#: Export actions as the Telethon transport names service lines ("[PhoneCall]", "[ChatEditTitle: X]").
ACTION_NAMES = {
    "create_group": "ChatCreate",
    "edit_group_title": "ChatEditTitle",
    "edit_group_photo": "ChatEditPhoto",
    "delete_group_photo": "ChatDeletePhoto",
    "invite_members": "ChatAddUser",
    "remove_members": "ChatDeleteUser",
    "join_group_by_link": "ChatJoinedByLink",
    "join_group_by_request": "ChatJoinedByRequest",
    "create_channel": "ChannelCreate",
    "migrate_to_supergroup": "ChatMigrateTo",
    "migrate_from_group": "ChannelMigrateFrom",
    "pin_message": "PinMessage",
    "clear_history": "HistoryClear",
    "score_in_game": "GameScore",
    "send_payment": "PaymentSent",
    "phone_call": "PhoneCall",
    "take_screenshot": "ScreenshotTaken",
    "allow_sending_messages": "BotAllowed",
    "joined_telegram": "ContactSignUp",
    "proximity_reached": "GeoProximityReached",
    "group_call": "GroupCall",
    "invite_to_group_call": "InviteToGroupCall",
    "set_messages_ttl": "SetMessagesTTL",
    "group_call_scheduled": "GroupCallScheduled",
    "edit_chat_theme": "SetChatTheme",
    "send_premium_gift": "GiftPremium",
    "topic_created": "TopicCreate",
    "topic_edit": "TopicEdit",
    "suggest_profile_photo": "SuggestProfilePhoto",
    "set_chat_wallpaper": "SetChatWallPaper",
}

#: Media an export names without a file: each becomes a part of kind "other" naming it.
OTHER_MEDIA = {
    "contact_information": "contact",
    "location_information": "location",
    "place_name": "venue",
    "poll": "poll",
    "game_title": "game",
    "invoice_information": "invoice",
}

_FROM_ID = re.compile(r"(user|channel|chat)(\d{1,15})")
_STICKER_FORMATS = {".tgs": "animated", ".webm": "video"}


@dataclass(frozen=True)
class ExportMessage:
    """A message as the import stores it. `kind` is the export's `type`: "message" and "service" are
    imported, any other is skipped and counted under its type."""

    index: int
    id: int
    kind: str
    date: dt.datetime | None  # None only for a skipped kind
    edited: dt.datetime | None = None
    sender_name: str = ""
    sender_id: int | None = None
    text: str = ""
    reply_to_id: int | None = None
    forwarded_from: str = ""
    media: tuple[MediaItem, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.text and not self.media


class MessageReader:
    """Reads the messages of one chat; `where` names the chat in errors ("messages[3] (id 17)")."""

    def __init__(self, *, display: str, where: str, zone: dt.tzinfo) -> None:
        self.display = display
        self.where = where
        self.zone = zone

    def fail(self, place: str, field: str, value: Any, expected: str) -> ChatExportError:
        return ChatExportError(
            f'{self.display}: {self.where}{place}: field "{field}" is {shown(value)}: expected {expected}'
        )

    def read(self, index: int, raw: Any) -> ExportMessage:
        place = f"messages[{index}]"
        if not isinstance(raw, dict):
            raise self.fail(place, "message", raw, "an object")
        message_id = raw.get("id")
        if isinstance(message_id, bool) or not isinstance(message_id, int) or not 0 < message_id < 2**31:
            raise self.fail(place, "id", message_id, "a positive whole number below 2**31 (the message id)")
        place = f"messages[{index}] (id {message_id})"
        kind = raw.get("type")
        if not isinstance(kind, str):
            raise self.fail(place, "type", kind, 'text such as "message" or "service"')
        if kind not in ("message", "service"):
            # Skipped; Telegram Desktop writes an unsupported message as its id and type alone.
            return ExportMessage(index=index, id=message_id, kind=kind, date=None)
        date = self._date(place, raw, "date", required=True)
        fields = {
            "index": index,
            "id": message_id,
            "kind": kind,
            "date": date,
            "edited": self._date(place, raw, "edited", required=False),
            "text": self._text(place, raw),
        }
        if kind == "service":
            fields["sender_name"] = self._string(place, raw, "actor")
            fields["sender_id"] = self._peer(place, raw, "actor_id")
            fields["text"] = self._service_text(place, raw)
            return ExportMessage(**fields)
        fields["sender_name"] = self._string(place, raw, "from")
        fields["sender_id"] = self._peer(place, raw, "from_id")
        fields["forwarded_from"] = self._string(place, raw, "forwarded_from")
        reply = raw.get("reply_to_message_id")
        if reply is not None and (
            isinstance(reply, bool) or not isinstance(reply, int) or not 0 < reply < 2**31
        ):
            raise self.fail(place, "reply_to_message_id", reply, "a positive whole number below 2**31")
        # With `reply_to_peer_id` the message answers one in another chat: no id of this conversation.
        fields["reply_to_id"] = reply if raw.get("reply_to_peer_id") is None else None
        fields["media"] = self._media(place, raw)
        return ExportMessage(**fields)

    def _string(self, place: str, raw: dict, field: str) -> str:
        value = raw.get(field)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(place, field, value, "text or null")
        return value

    def _number(self, place: str, raw: dict, field: str) -> float | None:
        value = raw.get(field)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise self.fail(place, field, value, "a number of seconds")
        return float(value)

    def _date(self, place: str, raw: dict, field: str, *, required: bool) -> dt.datetime | None:
        value = raw.get(field)
        if value is None:
            if required:
                raise self.fail(place, field, value, 'a date such as "2024-05-01T18:30:00"')
            return None
        if not isinstance(value, str):
            raise self.fail(place, field, value, 'a date such as "2024-05-01T18:30:00"')
        try:
            local = dt.datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(place, field, value, 'a date such as "2024-05-01T18:30:00"') from None
        stamp = raw.get(f"{field}_unixtime")
        if stamp is None:
            instant = local if local.tzinfo else local.replace(tzinfo=self.zone)
            seconds = instant.timestamp()
        else:
            if isinstance(stamp, str) and stamp.isascii() and stamp.isdigit() and len(stamp) <= 12:
                seconds = int(stamp)
            elif isinstance(stamp, int) and not isinstance(stamp, bool):
                seconds = stamp
            else:
                raise self.fail(
                    place, f"{field}_unixtime", stamp, 'seconds since 1970 as text, e.g. "1714588200"'
                )
        if field == "edited" and abs(seconds) <= _EPOCH_SLACK:
            return None  # older exports write "edited": "1970-01-01T01:00:00" for a message never edited
        if not _EARLIEST <= seconds <= _LATEST:
            name = field if stamp is None else f"{field}_unixtime"
            raise self.fail(place, name, value if stamp is None else stamp, "a date between 2013 and 2100")
        return dt.datetime.fromtimestamp(seconds, tz=dt.UTC)

    def _peer(self, place: str, raw: dict, field: str) -> int | None:
        value = raw.get(field)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < MAX_ID:
            return value  # older exports: a bare user id
        match = _FROM_ID.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            raise self.fail(place, field, value, '"user123", "channel456" or "chat789"')
        return peer_of(match.group(1), int(match.group(2)))

    def _text(self, place: str, raw: dict) -> str:
        entities = raw.get("text_entities")
        if entities is not None:
            if not isinstance(entities, list):
                raise self.fail(place, "text_entities", entities, "a list of {type, text} objects")
            for number, part in enumerate(entities):
                if not isinstance(part, dict) or not isinstance(part.get("text"), str):
                    raise self.fail(place, f"text_entities[{number}]", part, 'an object with a "text" string')
        value = raw.get("text")
        if value is None:
            return "".join(part["text"] for part in entities or ())
        if isinstance(value, str):
            return value
        if not isinstance(value, list):
            raise self.fail(place, "text", value, "text, or a list of text and {type, text} objects")
        pieces = []
        for number, part in enumerate(value):
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                pieces.append(part["text"])
            else:
                raise self.fail(place, f"text[{number}]", part, 'text, or an object with a "text" string')
        return "".join(pieces)

    def _service_text(self, place: str, raw: dict) -> str:
        action = self._string(place, raw, "action")
        info = self._string(place, raw, "information_text")
        title = self._string(place, raw, "title") or self._string(place, raw, "new_title")
        if not action:
            return f"[Custom: {info}]" if info else "[Custom]"
        name = ACTION_NAMES.get(action) or "".join(word.capitalize() for word in action.split("_"))
        return f"[{name}: {title}]" if title else f"[{name}]"

    def _media(self, place: str, raw: dict) -> tuple[MediaItem, ...]:
        items = []
        photo = self._string(place, raw, "photo")
        if photo:
            items.append(MediaItem(media_kind="photo", mime="image/jpeg", file_name=_file_name(photo)))
        path = self._string(place, raw, "file")
        media_type = self._string(place, raw, "media_type")
        if path or media_type:
            items.append(self._document(place, raw, path, media_type))
        for field, name in OTHER_MEDIA.items():
            if raw.get(field) is not None:
                extra: dict[str, Any] = {"type": name}
                poll = raw.get("poll")
                if name == "poll" and isinstance(poll, dict) and isinstance(poll.get("question"), str):
                    extra["question"] = poll["question"][:500]
                items.append(MediaItem(media_kind="other", extra=extra))
        return tuple(items)

    def _document(self, place: str, raw: dict, path: str, media_type: str) -> MediaItem:
        mime = self._string(place, raw, "mime_type")
        duration = self._number(place, raw, "duration_seconds")
        name = self._string(place, raw, "file_name") or _file_name(path)
        if media_type == "sticker":
            suffix = name[name.rfind(".") :].lower() if "." in name else ""
            return MediaItem(
                media_kind="sticker",
                sticker_name=self._string(place, raw, "sticker_emoji"),
                sticker_format=_STICKER_FORMATS.get(suffix, "static"),
            )
        common = {"mime": mime, "duration": duration, "file_name": name}
        if media_type == "voice_message":
            return MediaItem(media_kind="voice", **common)
        if media_type == "video_message":
            return MediaItem(media_kind="video", extra={"round": True}, **common)
        if media_type == "video_file":
            return MediaItem(media_kind="video", **common)
        if media_type == "animation":
            return MediaItem(
                media_kind="gif" if mime in ("video/mp4", "image/gif") else "animation", **common
            )
        if media_type == "audio_file":
            tags = {k: self._string(place, raw, k) for k in ("title", "performer")}
            return MediaItem(media_kind="audio", extra={k: v for k, v in tags.items() if v}, **common)
        if media_type:
            return MediaItem(media_kind="other", extra={"type": media_type}, **common)
        return MediaItem(media_kind="document", **common)


def peer_of(kind: str, bare: int) -> int:
    """A bare id as Telegram's marked peer id, the form the mirror keys chats and senders by: users
    as they are, basic groups negated, channels and supergroups under -100."""
    if kind == "user":
        return bare
    if kind == "chat":
        return -bare
    return -(1_000_000_000_000 + bare)


def _file_name(path: str) -> str:
    """The file's name when the export holds the file ("photos/photo_1.jpg"), "" when it left it out
    ("(File not included. Change data exporting settings to download.)")."""
    if not path or path.startswith("("):
        return ""
    return path.rsplit("/", 1)[-1][:255]
