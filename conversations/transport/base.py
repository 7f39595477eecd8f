"""The transport protocol: every Telegram operation Cindy uses goes through it.

Two implementations exist: `TelethonTransport` (real Telegram) and `SandboxTransport` (a DB-backed
stand-in). Both turn their native objects into the plain records below before the engine sees them,
so the engine, the ingest code and the tests never touch Telethon types.

Errors are part of the protocol:
- `FloodWait`: Telegram asked us to wait; the caller reschedules, it is not a failure.
- `PermanentError`: retrying cannot help (USER_IS_BLOCKED, CHAT_WRITE_FORBIDDEN, ...); fail at once.
- `AuthError`: the account's session is unusable (AUTH_KEY_UNREGISTERED, ...); stop the agent.
- any other `TransportError`: transient, retried by the engine.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

# Re-exported: the transports build the records below from it and name it here.
from media_catalog.parts import MediaItem as MediaItem

ChatKind = Literal["dm", "group", "channel"]


class TransportError(Exception):
    """A transient failure; the engine retries the node."""


class FloodWait(TransportError):
    def __init__(self, seconds: int, message: str = "") -> None:
        self.seconds = int(seconds)
        super().__init__(message or f"Telegram asked to wait {self.seconds}s (FLOOD_WAIT)")


class PermanentError(TransportError):
    """Retrying cannot succeed. `reason` is Telegram's error code, e.g. USER_IS_BLOCKED."""

    def __init__(self, reason: str, message: str = "") -> None:
        self.reason = reason
        super().__init__(message or reason)


class AuthError(TransportError):
    """The account cannot be used any more; the gateway stops the agent and shows `reason`."""

    def __init__(self, reason: str, message: str = "") -> None:
        self.reason = reason
        super().__init__(message or reason)


@dataclass(frozen=True)
class ReactionInfo:
    emoji: str
    count: int = 1
    user_ids: tuple[int, ...] = ()
    unread: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "emoji": self.emoji,
            "count": self.count,
            "user_ids": list(self.user_ids),
            "unread": self.unread,
        }


@dataclass(frozen=True)
class InboundMessage:
    """A message as the agent's account sees it."""

    peer_id: int
    chat_kind: ChatKind
    message_id: int
    date: dt.datetime
    sender_id: int | None
    sender_name: str = ""
    sender_username: str = ""
    sender_is_bot: bool = False
    is_outgoing: bool = False  # sent by the agent's account (from Cindy or another device)
    text: str = ""
    reply_to_id: int | None = None
    media: tuple[MediaItem, ...] = ()
    reactions: tuple[ReactionInfo, ...] = ()
    mentions_agent: bool = False
    reply_to_agent: bool = False
    forwarded_from: str = ""
    is_service: bool = False
    edited_at: dt.datetime | None = None
    chat_title: str = ""
    chat_username: str = ""
    random_id: int | None = None
    #: In a forum group: the topic the message is in (its top message id) and the topic's title; None
    #: in DMs, plain groups and a forum's General topic. `reply_to_id` then names a message the person
    #: replied to inside the topic, never the topic itself.
    topic_id: int | None = None
    topic_title: str = ""
    #: Why the account cannot write in this group or channel (`WRITE_REFUSALS`); "" when it can.
    cannot_write: str = ""


@dataclass(frozen=True)
class HistoryPage:
    """One page of a chat's older history, for a backfill: the readable messages, oldest first, and
    what the page held as Telegram sent it (`count` entries, the oldest of them `oldest_id` from
    `oldest_date`; None when the page was empty), so paging goes on past an unreadable message and
    a page shorter than asked for marks the chat's beginning."""

    messages: list[InboundMessage]
    count: int
    oldest_id: int | None
    oldest_date: dt.datetime | None


@dataclass(frozen=True)
class NewMessage:
    message: InboundMessage


@dataclass(frozen=True)
class MessageEdited:
    message: InboundMessage


@dataclass(frozen=True)
class MessagesDeleted:
    peer_id: int | None  # None when Telegram does not say (private chats and basic groups)
    message_ids: tuple[int, ...]


@dataclass(frozen=True)
class ReactionsChanged:
    peer_id: int
    message_id: int
    reactions: tuple[ReactionInfo, ...]
    unread: bool = False  # an unread reaction on one of the agent's messages


@dataclass(frozen=True)
class PartnerTyping:
    """The other side of a DM is typing, for about `seconds` more (Telegram shows typing for ~6 s
    after each typing update); 0 means it stopped."""

    peer_id: int
    seconds: float


@dataclass(frozen=True)
class DialogUnreadMark:
    """The account marked a dialog unread (`unread`), or cleared the mark, e.g. from its phone.
    Telegram's `UpdateDialogUnreadMark`; the transport's `mark_read` clears the mark as well."""

    peer_id: int
    unread: bool


#: How long one Telegram typing update lasts, unless a newer one or a cancel comes first.
TYPING_UPDATE_SECONDS = 6.0


#: Why an account may be unable to write in a group or channel, as the reason the activity log shows.
WRITE_REFUSALS = {
    "read_only": "read-only channel: only its admins post",
    "restricted": "restricted: an admin took away the account's right to send messages",
    "members_restricted": "restricted group: its members may not send messages",
    "banned": "banned from the chat",
    "left": "no longer a member of the chat",
}


Update = NewMessage | MessageEdited | MessagesDeleted | ReactionsChanged | PartnerTyping | DialogUnreadMark


def topic_kwargs(topic_id: int | None) -> dict[str, int]:
    """`{"topic_id": N}` for a forum topic, `{}` otherwise: the keyword a transport call gets, so a
    conversation without a topic calls the transport exactly as before forums existed."""
    return {"topic_id": int(topic_id)} if topic_id else {}


@dataclass(frozen=True)
class SentMessage:
    peer_id: int
    message_id: int
    date: dt.datetime
    random_id: int | None = None
    #: The id the transport gave the sent media, when it differs from what was sent (a library file
    #: uploaded with the send gets a new id on Telegram); "" otherwise.
    media_unique_id: str = ""


@dataclass(frozen=True)
class AccountInfo:
    user_id: int
    name: str = ""
    username: str = ""
    premium: bool = False  # Telegram Premium: the account may send premium stickers


@dataclass(frozen=True)
class ChatDetails:
    """What the prompt's channel-details section and the Conversation row need about a peer.

    `extra` of an entry of `dialogs()` carries the dialog list's marks, where the transport has them:
    `read_inbox_max_id`, `top_message`, `top_date` (an aware datetime), `unread_count`, `unread_mark`,
    `unread_mentions_count` and `unread_reactions_count` (what Telegram's messages.getDialogs returns).
    """

    peer_id: int
    kind: ChatKind
    title: str = ""
    username: str = ""
    about: str = ""
    participants_count: int | None = None
    participants: tuple[str, ...] = ()
    muted: bool = False
    blocked: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    cannot_write: str = ""  # why the account cannot write here (`WRITE_REFUSALS`); "" when it can


@dataclass(frozen=True)
class StickerRef:
    """A sticker that can be sent. `ref` is opaque, transport-specific data (ids, access hash...)."""

    set_short_name: str
    name: str
    unique_id: str = ""
    ref: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LibraryRef:
    """An item of the agent's media library that can be sent: on Telegram a Saved Messages message
    (`saved_message_id`), in the sandbox an uploaded file (`file`, relative to MEDIA_ROOT)."""

    unique_id: str
    media_kind: str = "photo"
    saved_message_id: int | None = None
    file: str = ""
    mime: str = ""
    sticker_set_name: str = ""  # a sticker from a set: it also joins the agent's sticker list
    sticker_name: str = ""


@dataclass(frozen=True)
class VoiceRef:
    """A voice note to send: an OGG/Opus file (`file`, relative to MEDIA_ROOT), its duration in
    seconds, Telegram's packed waveform, and what it says (shown as its transcript in the sandbox)."""

    file: str
    duration: float
    waveform: bytes = b""
    transcript: str = ""
    mime: str = "audio/ogg"


@dataclass(frozen=True)
class LibrarySave:
    """What `save_to_library` did: `item` is the media in Saved Messages; `already` when it was
    there before (nothing was sent)."""

    item: LibraryRef
    already: bool = False


@dataclass(frozen=True)
class StickerSetInfo:
    short_name: str
    title: str
    stickers: tuple[StickerRef, ...] = ()


@dataclass(frozen=True)
class ProfilePhoto:
    """One of the account's profile photos; `path` is where the gateway saved it (under MEDIA_ROOT)."""

    photo_id: int
    date: dt.datetime | None = None
    path: str = ""


@dataclass(frozen=True)
class ProfileInfo:
    """The account's own profile, as other Telegram users see it."""

    user_id: int
    first_name: str = ""
    last_name: str = ""
    username: str = ""
    about: str = ""
    about_limit: int = 70  # Telegram allows 70 characters, 140 with Premium
    photos: tuple[ProfilePhoto, ...] = ()


@dataclass(frozen=True)
class ContactInfo:
    user_id: int
    first_name: str = ""
    last_name: str = ""
    username: str = ""
    phone: str = ""
    mutual: bool = False


@runtime_checkable
class Transport(Protocol):
    """Every Telegram operation Cindy uses. All methods are coroutines run on the gateway's loop.

    A transport that receives updates on its own (Telethon) also has an `on_update` attribute: the
    gateway sets it to a callable, which the transport calls on the loop when it queues an update, so
    an idle gateway polls at once (`engine/wake.py`). The sandbox has none: its writers wake gateways.
    Such a transport may also have a `poll_pending` property, False while `poll_updates` would return
    nothing and raise nothing: the gateway then leaves it unpolled (`engine.connect_steps.IngestStep`).
    """

    async def connect(self) -> AccountInfo: ...

    async def disconnect(self) -> None: ...

    async def poll_updates(self) -> list[Update]:
        """Return the updates received since the last call, oldest first, without blocking."""
        ...

    async def history(
        self,
        peer_id: int,
        *,
        since_id: int | None = None,
        around_id: int | None = None,
        limit: int = 100,
        topic_id: int | None = None,
    ) -> list[InboundMessage]:
        """Messages of a chat in chronological order: after `since_id`, around `around_id`, or newest;
        with `topic_id`, only that forum topic's."""
        ...

    async def history_page(self, peer_id: int, *, before_id: int = 0, limit: int = 100) -> HistoryPage:
        """The `limit` messages of a chat before message `before_id` (0: its newest), every forum
        topic included: a backfill's page (engine/backfill_requests.py)."""
        ...

    async def dialogs(self, *, limit: int = 100) -> list[ChatDetails]: ...

    # Sends, typing and read marks take `topic_id` in a forum group: the message goes to that topic
    # (Telegram: `reply_to` with the topic's top message id), the typing shows there. Callers pass it
    # only for a topic (`topic_kwargs`), so a transport without forums needs no change.

    async def send_text(
        self,
        peer_id: int,
        text: str,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        """Send text. A repeated random_id returns the earlier message and sends nothing new."""
        ...

    async def send_sticker(
        self,
        peer_id: int,
        sticker: StickerRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage: ...

    async def send_media(
        self,
        peer_id: int,
        item: LibraryRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        caption: str = "",
        topic_id: int | None = None,
    ) -> SentMessage:
        """Send an item of the agent's media library, with `caption` as the message's text. A repeated
        random_id sends nothing new."""
        ...

    async def send_voice(
        self,
        peer_id: int,
        voice: VoiceRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        """Upload and send a voice note. A repeated random_id sends nothing new."""
        ...

    async def set_recording(self, peer_id: int, *, topic_id: int | None = None) -> None:
        """Show "recording a voice message" in the chat (for about 6 s, like typing)."""
        ...

    async def saved_media(self, *, limit: int = 200) -> list[LibraryRef]:
        """The media in the account's Saved Messages, newest first: its media library on Telegram."""
        ...

    async def save_to_library(self, peer_id: int, message_id: int, unique_id: str) -> LibrarySave:
        """Keep one media item of a chat's message in the account's Saved Messages (its media library),
        as the same media (the unique id stays); nothing is sent when it is already there."""
        ...

    async def react(self, peer_id: int, message_id: int, emoji: str) -> None: ...

    async def mark_read(self, peer_id: int, max_id: int, *, topic_id: int | None = None) -> None: ...

    async def set_typing(self, peer_id: int, typing: bool = True, *, topic_id: int | None = None) -> None: ...

    async def set_online(self, online: bool) -> None:
        """Show the account online or offline to others (Telegram's account.updateStatus)."""
        ...

    async def block(self, user_id: int) -> None: ...

    async def unblock(self, user_id: int) -> None: ...

    async def delete_history(self, peer_id: int) -> None: ...

    async def download_media(self, peer_id: int, message_id: int, dest_dir: Path) -> Path | None:
        """Save the message's media under `dest_dir`; return the file path, or None if it has none."""
        ...

    async def resolve_sticker_set(self, short_name: str) -> StickerSetInfo: ...

    async def get_details(self, peer_id: int) -> ChatDetails: ...

    async def is_muted(self, peer_id: int) -> bool: ...

    async def is_blocked(self, user_id: int) -> bool: ...

    # --- the account: notification settings, memberships, profile and contacts ---------------------

    async def set_muted(self, peer_id: int, muted: bool) -> None:
        """Mute (for ever) or unmute a chat's notifications, as the account's settings on Telegram."""
        ...

    async def join_chat(self, target: str) -> ChatDetails:
        """Join a public group or channel by @username (or t.me link), or a private one by invite link."""
        ...

    async def leave_chat(self, peer_id: int) -> None: ...

    async def get_profile(self, *, photo_dir: Path) -> ProfileInfo:
        """The account's profile; its photos are saved under `photo_dir`, newest first."""
        ...

    async def update_profile(self, *, first_name: str, last_name: str, about: str) -> None: ...

    async def set_username(self, username: str) -> None:
        """Set (or, with "", remove) the account's public username."""
        ...

    async def add_profile_photo(self, path: Path) -> None: ...

    async def delete_profile_photo(self, photo_id: int) -> None: ...

    async def contacts(self) -> list[ContactInfo]: ...

    async def add_contact(self, target: str, *, first_name: str, last_name: str = "") -> ContactInfo:
        """Add a user (by numeric id or @username) to the account's contacts; with no `first_name`,
        under the user's own names."""
        ...

    async def delete_contacts(self, user_ids: list[int]) -> None: ...
