"""What each kind of record contributes to the index: the text an entry holds and its scope.

Pure functions over rows already read (the message's media descriptions passed in), so that ingest
and the build share them and a test can call them alone.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from agents.models import AgentDocument
from conversations.models import TELEGRAM_SERVICE_USER_ID, Conversation, Message
from media_catalog.parts import MediaPartError, media_items
from memory.models import Intention, Memory, Note, Plan, Summary
from recall.models import EntryKind

#: A document is cut into sections at its headings, and a long section further at paragraph breaks,
#: so that a hit shows the part of the document that matters rather than all of it.
SECTION_CHARS = 1500
_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)


@dataclass(frozen=True)
class EntryValues:
    """One entry as it is written: everything but its primary key."""

    agent_id: int
    conversation_id: int | None
    peer_id: int | None
    topic_id: int
    kind: str
    source_id: int
    part: int
    message_id: int | None
    date: dt.datetime
    text: str


def message_indexed(conversation: Conversation, message: Message) -> bool:
    """Whether a message belongs in the index: not deleted, not a service line, not a placeholder
    for a sign-in code, and not in the chat with Telegram's service account."""
    return not (
        message.deleted
        or message.is_service
        or message.redacted
        or conversation.peer_id == TELEGRAM_SERVICE_USER_ID
    )


def media_unique_ids(message: Message) -> list[str]:
    try:
        return [item.unique_id for item in media_items(message.media) if item.unique_id]
    except MediaPartError:
        return []


def message_text(message: Message, descriptions: Mapping[str, str]) -> str:
    """The message as recall searches it: its text (a caption is the text), then for each media
    part what the agent knows it shows or says: the catalog's description (`descriptions`, by
    unique id; a voice note's transcript is its description), the transcript of the agent's own
    voice note, and a document's file name."""
    pieces = [message.text.strip()]
    try:
        items = media_items(message.media)
    except MediaPartError:
        items = []
    for item in items:
        pieces.append(descriptions.get(item.unique_id, "") if item.unique_id else "")
        pieces.append(item.transcript)
        pieces.append(item.file_name)
    return "\n".join(piece.strip() for piece in pieces if piece and piece.strip())


def message_entry(
    conversation: Conversation, message: Message, descriptions: Mapping[str, str]
) -> EntryValues:
    return EntryValues(
        agent_id=conversation.agent_id,
        conversation_id=conversation.pk,
        peer_id=conversation.peer_id,
        topic_id=conversation.topic_id,
        kind=EntryKind.MESSAGE,
        source_id=message.pk,
        part=0,
        message_id=message.message_id,
        date=message.date,
        text=message_text(message, descriptions),
    )


def stored_entry(
    row: Memory | Note | Summary | Plan | Intention, *, fallback_date: dt.datetime
) -> EntryValues | None:
    """A memory, note, summary, plan or intention as an entry, scoped as the prompt shows it: a
    curated memory to the DM with its partner; notes, summaries and plans to their chat (and forum
    topic); episodic memories and intentions to the whole agent. None for rows recall leaves out
    (cross-chat `xsend` intents, which name another chat, and empty content)."""
    content = (row.content or "").strip()
    if not content:
        return None
    peer_id: int | None = None
    topic_id = 0
    if isinstance(row, Memory):
        kind = EntryKind.MEMORY
        if row.kind == Memory.Kind.CURATED:
            peer_id = row.partner_id
        date = row.created or row.updated
    elif isinstance(row, Intention):
        if row.kind != Intention.Kind.INTEND:
            return None
        kind, date = EntryKind.INTENTION, row.created
    else:
        kind = {Note: EntryKind.NOTE, Summary: EntryKind.SUMMARY, Plan: EntryKind.PLAN}[type(row)]
        peer_id, topic_id, date = row.channel_id, row.topic_id, row.created
    return EntryValues(
        agent_id=row.agent_id,
        conversation_id=None,
        peer_id=peer_id,
        topic_id=topic_id,
        kind=kind,
        source_id=row.pk,
        part=0,
        message_id=None,
        date=date or fallback_date,
        text=content,
    )


def document_sections(content: str, *, limit: int = SECTION_CHARS) -> list[str]:
    """A document cut at its Markdown headings, each section cut again at blank lines (or, for a
    paragraph longer than `limit`, at `limit` characters) into pieces of at most `limit`."""
    sections: list[str] = []
    starts = [m.start() for m in _HEADING.finditer(content)]
    bounds = [0, *[s for s in starts if s > 0], len(content)]
    for begin, end in zip(bounds, bounds[1:], strict=False):
        sections.extend(_pieces(content[begin:end], limit))
    return [s for s in sections if s.strip()]


def _pieces(section: str, limit: int) -> Iterator[str]:
    current = ""
    for paragraph in re.split(r"\n\s*\n", section):
        paragraph = paragraph.strip()
        while len(paragraph) > limit:
            if current:
                yield current
                current = ""
            yield paragraph[:limit]
            paragraph = paragraph[limit:]
        if current and len(current) + 2 + len(paragraph) > limit:
            yield current
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
    if current:
        yield current


def document_entries(document: AgentDocument) -> list[EntryValues]:
    """An agent document's sections as global entries, numbered from 0 in their order."""
    return [
        EntryValues(
            agent_id=document.agent_id,
            conversation_id=None,
            peer_id=None,
            topic_id=0,
            kind=EntryKind.DOCUMENT,
            source_id=document.pk,
            part=number,
            message_id=None,
            date=document.updated,
            text=f"{document.name}\n{section}" if number == 0 else section,
        )
        for number, section in enumerate(document_sections(document.content))
    ]
