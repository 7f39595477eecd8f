"""The chats of an export: a single-chat export (`name`, `type`, `id`, `messages` at the top) or a
full export (`chats: {list: [...]}`, with `personal_information` naming the exporting account).

From a full export, `--chat ID_OR_NAME` picks one chat; without it every personal chat
(`personal_chat`) is imported, and groups, channels, bots and Saved Messages are left out. Each chosen
chat is read whole, every message checked, before anything is written.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cwimport.chatexport.messages import ExportMessage, MessageReader, peer_of
from cwimport.chatexport.reading import MAX_ID, ChatExportError, shown

#: Chat types a DM conversation stands for, and groups and channels (by the `type` an export writes).
DM_TYPES = ("personal_chat", "bot_chat")
GROUP_TYPES = {"private_group": "chat", "private_supergroup": "channel", "public_supergroup": "channel"}
CHANNEL_TYPES = ("private_channel", "public_channel")


@dataclass(frozen=True)
class ExportChat:
    where: str  # how errors and the summary name it: 'chat "Ann" (id 123)'
    name: str
    type: str
    id: int  # the bare id the export writes
    messages: tuple[ExportMessage, ...]

    @property
    def chat_kind(self) -> str:
        if self.type in DM_TYPES:
            return "dm"
        return "channel" if self.type in CHANNEL_TYPES else "group"

    @property
    def peer_id(self) -> int:
        """The chat's marked peer id, as the mirror keys Telegram chats."""
        if self.type in GROUP_TYPES:
            return peer_of(GROUP_TYPES[self.type], self.id)
        if self.type in CHANNEL_TYPES:
            return peer_of("channel", self.id)
        return self.id


@dataclass(frozen=True)
class ChatExport:
    display: str
    chats: tuple[ExportChat, ...]
    #: The exporting account's user id (a full export's `personal_information.user_id`), else None.
    account_id: int | None


def export_chats(path: Path, data: Any, *, choose: str | None, zone: dt.tzinfo) -> ChatExport:
    """The chats to import from the export's JSON `data`, every message checked."""
    display = str(path)
    if not isinstance(data, dict):
        raise ChatExportError(
            f"{display}: the top level is {shown(data)}: expected an object (a chat, or chats)"
        )
    if "chats" not in data:
        if choose is not None:
            raise ChatExportError(
                f"{display}: a single-chat export: --chat is for a full export; leave it out"
            )
        chat = _chat(display, data, number=None, zone=zone)
        return ChatExport(display=display, chats=(chat,), account_id=None)
    chats = data["chats"]
    listed = chats.get("list") if isinstance(chats, dict) else None
    if not isinstance(listed, list):
        raise ChatExportError(
            f'{display}: field "chats" is {shown(chats)}: expected an object with a "list" of chats'
        )
    heads = [_head(display, number, raw) for number, raw in enumerate(listed)]
    if choose is not None:
        picked = [n for n, (name, _, chat_id) in enumerate(heads) if choose in (str(chat_id), name)]
        if not picked:
            names = ", ".join(f"{name or '?'} ({chat_id})" for name, _, chat_id in heads[:10]) or "none"
            raise ChatExportError(
                f"{display}: no chat named or numbered {choose!r} (chats: {names}): give --chat ID"
            )
        if len(picked) > 1:
            ids = ", ".join(str(heads[n][2]) for n in picked)
            raise ChatExportError(
                f"{display}: {len(picked)} chats are named {choose!r} (ids {ids}): give --chat ID"
            )
    else:
        picked = [n for n, (_, kind, _) in enumerate(heads) if kind == "personal_chat"]
        if not picked:
            raise ChatExportError(
                f"{display}: no personal chat in chats.list: pick one with --chat ID_OR_NAME"
            )
    chosen = tuple(_chat(display, listed[n], number=n, zone=zone) for n in picked)
    return ChatExport(display=display, chats=chosen, account_id=_account(display, data))


def _head(display: str, number: int, raw: Any) -> tuple[str, str, int]:
    if not isinstance(raw, dict):
        raise ChatExportError(f"{display}: chats.list[{number}] is {shown(raw)}: expected a chat object")
    name, kind, chat_id = raw.get("name"), raw.get("type"), raw.get("id")
    if name is not None and not isinstance(name, str):
        raise ChatExportError(
            f'{display}: chats.list[{number}]: field "name" is {shown(name)}: expected text'
        )
    if not isinstance(kind, str):
        raise ChatExportError(
            f'{display}: chats.list[{number}]: field "type" is {shown(kind)}: expected text'
        )
    if isinstance(chat_id, bool) or not isinstance(chat_id, int) or abs(chat_id) >= MAX_ID:
        raise ChatExportError(
            f'{display}: chats.list[{number}]: field "id" is {shown(chat_id)}: expected a whole number'
        )
    return name or "", kind, chat_id


def _account(display: str, data: dict) -> int | None:
    info = data.get("personal_information")
    user_id = info.get("user_id") if isinstance(info, dict) else None
    if user_id is None:
        return None
    if isinstance(user_id, bool) or not isinstance(user_id, int) or not 0 < user_id < MAX_ID:
        raise ChatExportError(
            f'{display}: personal_information: field "user_id" is {shown(user_id)}: expected a positive whole number'
        )
    return user_id


def _chat(display: str, raw: dict, *, number: int | None, zone: dt.tzinfo) -> ExportChat:
    """One chat, read whole: `number` is its place in a full export's list (None: a single-chat export)."""
    name, kind, chat_id = _single_head(display, raw) if number is None else _head(display, number, raw)
    label = f'chat "{name}" (id {chat_id})' if name else f"chat {chat_id}"
    where = "" if number is None else f"chats.list[{number}] "
    if kind in ("saved_messages", "replies") or not (
        kind in DM_TYPES or kind in GROUP_TYPES or kind in CHANNEL_TYPES
    ):
        raise ChatExportError(
            f"{display}: {where}{label} is of type {kind!r}: an import takes a personal chat, a bot's chat, "
            "a group or a channel"
        )
    if chat_id <= 0:
        raise ChatExportError(
            f'{display}: {where}{label}: field "id" is {chat_id}: expected a positive number'
        )
    messages = raw.get("messages")
    if not isinstance(messages, list):
        raise ChatExportError(
            f'{display}: {where}{label}: field "messages" is {shown(messages)}: expected a list of messages'
        )
    reader = MessageReader(display=display, where=f"{where}{label} ", zone=zone)
    read = tuple(reader.read(index, item) for index, item in enumerate(messages))
    seen: dict[int, int] = {}
    for message in read:
        if message.id in seen:
            raise ChatExportError(
                f"{display}: {where}{label} messages[{message.index}]: message id {message.id} appears twice "
                f"(also at messages[{seen[message.id]}]): an export holds each message once; export the chat again"
            )
        seen[message.id] = message.index
    return ExportChat(where=label, name=name, type=kind, id=chat_id, messages=read)


def _single_head(display: str, raw: dict) -> tuple[str, str, int]:
    try:
        return _head(display, 0, raw)
    except ChatExportError as exc:
        raise ChatExportError(str(exc).replace("chats.list[0]: ", "", 1)) from None
