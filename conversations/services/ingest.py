"""Writing the DB mirror: conversations and messages upserted from the transport's plain records.

Everything here is idempotent: the same record ingested twice (an update and then the reconciler's
history, or a send retried after a crash) leaves one row.
"""

from __future__ import annotations

import datetime as dt
import re

from django.db import IntegrityError, connections, router, transaction

from agents.models import Agent
from cindy_site import rows
from cindy_site.bulk import update_by_pk
from cindy_site.clock import now
from conversations.models import TELEGRAM_SERVICE_USER_ID, ActivityEvent, Conversation, Message
from conversations.selectors import conversation_by_key, message_by_key
from conversations.services.activity import record_event
from conversations.signals import message_stored, messages_deleted
from conversations.transport.base import ChatDetails, InboundMessage, MediaItem, ReactionInfo, SentMessage
from media_catalog.models import LibraryItem, MediaDescription
from media_catalog.parts import StoredMedia, media_items

Kind = ActivityEvent.Kind

#: What a redacted message shows everywhere (mirror, activity stream, dashboard, prompts).
REDACTED_TEXT = "[one-time sign-in code]"
#: One-time codes are sent with random ids from here up (`engine.requests`), above the range nodes
#: draw theirs from (1 .. 2**62), so an outgoing message carrying one is stored redacted even when its
#: copy arrives before the gateway's own record of the send (a crash between the two).
OTP_RANDOM_ID_BASE = 3 << 61
#: In a message from Telegram's service account: the word after "code:" (login codes, web login codes
#: such as "AbC-12dEf"), and any run of 5 or more digits, possibly grouped ("12 345", "12-345"), that
#: is not part of a date or time.
_SERVICE_CODE = re.compile(
    r"(?i)(?<=code)(:\s{0,3})([A-Za-z0-9][A-Za-z0-9_-]{3,})|(?<![\d/.:])\d(?:[ -]?\d){4,}(?![\d/.:])"
)


def redact_service_codes(text: str) -> str:
    """`text` with every code Telegram's service account may send replaced by REDACTED_TEXT."""

    def replace(match: re.Match) -> str:
        return f"{match.group(1)}{REDACTED_TEXT}" if match.group(1) is not None else REDACTED_TEXT

    return _SERVICE_CODE.sub(replace, text)


def _keep_local_media(old: list[dict], new: list[dict]) -> list[dict]:
    """Carry what the gateway added to media parts (the downloaded `file`) over a re-delivery."""
    local = {
        p.unique_id: {k: v for k, v in (("file", p.file), ("download_error", p.download_error)) if v}
        for p in media_items(old)
        if p.unique_id
    }
    return [{**part, **local.get(MediaItem.from_part(part).unique_id, {})} for part in new]


def _set_last_message_at(conversation_id: int, at: dt.datetime) -> None:
    """Plain SQL: per ingested message; `update()` builds and compiles a query (about 0.2 ms of CPU
    against 0.02 ms through the cursor; measured in cindy_site/rows.py)."""
    connection = connections[router.db_for_write(Conversation)]
    with transaction.mark_for_rollback_on_error(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {rows.table(Conversation)} SET last_message_at = %s WHERE id = %s",  # noqa: S608
            [connection.ops.adapt_datetimefield_value(at), conversation_id],
        )


def conversation_upsert(
    *,
    agent: Agent,
    peer_id: int,
    kind: str,
    title: str = "",
    username: str = "",
    topic_id: int | None = None,
    topic_title: str = "",
) -> Conversation:
    """The agent's conversation with `peer_id` (in a forum group: with one of its topics, `topic_id`),
    created on first sight; title, username and topic title kept fresh.

    A forum topic is a conversation of its own, on the group's peer: its own history, graphs, read
    mark, summaries and plans. A new topic conversation takes the group's settings and details from
    the group's own conversation (topic 0) when there is one."""
    topic_id = int(topic_id or 0)
    key = {"agent": agent, "peer_id": peer_id, "topic_id": topic_id}
    conversation = conversation_by_key(agent_id=agent.pk, peer_id=int(peer_id), topic_id=topic_id)
    if conversation is not None:
        conversation.agent = agent  # the caller's row: reading `conversation.agent` costs no query
    else:
        fields = {
            "kind": kind,
            "title": title[:255],
            "username": username[:64],
            "topic_title": topic_title[:255],
        }
        if topic_id:
            fields |= _group_settings(agent=agent, peer_id=peer_id)
        try:
            with transaction.atomic():
                return Conversation.objects.create(**key, **fields)
        except IntegrityError:
            conversation = Conversation.objects.get(**key)
    changed = {}
    if title and conversation.title != title[:255]:
        changed["title"] = title[:255]
    if username and conversation.username != username[:64]:
        changed["username"] = username[:64]
    if topic_title and conversation.topic_title != topic_title[:255]:
        changed["topic_title"] = topic_title[:255]
    if changed:
        Conversation.objects.filter(pk=conversation.pk).update(**changed)
        for field, value in changed.items():
            setattr(conversation, field, value)
    return conversation


#: What a forum topic's conversation takes over from its group's conversation when it is created.
GROUP_SETTINGS = ("muted", "gagged", "answer_bots", "llm_model", "details")


def _group_settings(*, agent: Agent, peer_id: int) -> dict:
    group = (
        Conversation.objects.filter(agent=agent, peer_id=peer_id, topic_id=0).values(*GROUP_SETTINGS).first()
    )
    return group or {}


def conversation_apply_details(
    *, agent: Agent, details: ChatDetails, keep_muted: bool = False
) -> Conversation:
    """Refresh a conversation from the transport's details: title, mute and block state, prompt details.

    `keep_muted` leaves the stored mute state as it is: the caller knows of a mute change the details
    may not show yet (asked by an operator, not yet sent or sent while they were read)."""
    conversation = conversation_upsert(
        agent=agent,
        peer_id=details.peer_id,
        kind=details.kind,
        title=details.title,
        username=details.username,
    )
    fields = {
        "muted": details.muted,
        "cannot_write": details.cannot_write[:200],
        "details": {
            "about": details.about,
            "participants_count": details.participants_count,
            "participants": list(details.participants),
        },
    }
    if keep_muted:
        del fields["muted"]
    # A dialog list does not always say whether a user is blocked (Telegram's does not), so only a
    # positive report is applied here; unblocking goes through the unblock handler.
    if details.blocked:
        fields["blocked"] = True
    Conversation.objects.filter(pk=conversation.pk).update(**fields)
    # A forum's topics are the same Telegram chat: its mute state and details are theirs too.
    Conversation.objects.filter(agent=agent, peer_id=details.peer_id).exclude(topic_id=0).update(**fields)
    for field, value in fields.items():
        setattr(conversation, field, value)
    return conversation


def _message_fields(record: InboundMessage) -> dict:
    return {
        "sender_id": record.sender_id,
        "sender_name": record.sender_name[:255],
        "sender_username": (record.sender_username or "")[:64],
        "sender_is_bot": record.sender_is_bot,
        "is_agent": record.is_outgoing,
        "date": record.date,
        "text": record.text,
        "reply_to_id": record.reply_to_id,
        "media": [item.to_part() for item in record.media],
        "reactions": [r.to_json() for r in record.reactions],
        "mentions_agent": record.mentions_agent,
        "forwarded_from": record.forwarded_from[:255],
        "is_service": record.is_service,
    }


def message_upsert(
    *, agent: Agent, record: InboundMessage, edited: bool = False, redacted: bool = False, quiet: bool = False
) -> tuple[Conversation, Message, bool]:
    """Upsert one message on (conversation, message_id); returns (conversation, message, created).

    A new message writes `message_in` (or `message_out` for the agent's own); an edit writes
    `message_edited`. Re-ingesting an unchanged message writes nothing. `redacted` stores
    `REDACTED_TEXT` instead of the text, for good: later deliveries of the same message keep it.
    `quiet` (older history fetched by a backfill) writes no activity event.
    """
    conversation = conversation_upsert(
        agent=agent,
        peer_id=record.peer_id,
        kind=record.chat_kind,
        title=record.chat_title,
        username=record.chat_username,
        topic_id=record.topic_id,
        topic_title=record.topic_title,
    )
    if record.chat_kind != Conversation.Kind.DM and conversation.cannot_write != record.cannot_write:
        # Rights change (an admin restricts the account, a group turns read-only): every message
        # brings the chat's current ones, so the next trigger decides on them.
        Conversation.objects.filter(pk=conversation.pk).update(cannot_write=record.cannot_write[:200])
        conversation.cannot_write = record.cannot_write[:200]
    fields = _message_fields(record)
    if edited:
        fields.update(edited=True, edited_at=record.edited_at or now())
    if redacted or (record.is_outgoing and (record.random_id or 0) >= OTP_RANDOM_ID_BASE):
        fields.update(text=REDACTED_TEXT, redacted=True)
    elif TELEGRAM_SERVICE_USER_ID in (record.peer_id, record.sender_id) and not record.is_outgoing:
        clean = redact_service_codes(record.text)
        if clean != record.text:
            fields.update(text=clean, redacted=True)
    with transaction.atomic():
        message = message_by_key(conversation_id=conversation.pk, message_id=int(record.message_id))
        created = message is None
        if created:
            try:
                with transaction.atomic():
                    message = rows.insert(
                        Message(
                            conversation=conversation,
                            message_id=record.message_id,
                            random_id=record.random_id,
                            **fields,
                        )
                    )
            except IntegrityError:
                created = False
                message = Message.objects.get(conversation=conversation, message_id=record.message_id)
        changed = created
        if not created:
            before = (message.text, message.media)
            if not edited:
                # A plain re-delivery: keep what we know (edits, deletions, a random_id) and refresh the rest.
                fields.pop("is_agent")
            if message.redacted and not fields.get("redacted"):  # never restored by a re-delivery or edit
                fields.update(text=REDACTED_TEXT, redacted=True)
            fields["media"] = _keep_local_media(message.media, fields["media"])
            if record.random_id is not None and message.random_id is None:
                fields["random_id"] = record.random_id
            Message.objects.filter(pk=message.pk).update(**fields)
            for field, value in fields.items():
                setattr(message, field, value)
            changed = (message.text, message.media) != before
        if changed:
            message_stored.send(Message, conversation=conversation, message=message, created=created)
        if created and (conversation.last_message_at is None or record.date > conversation.last_message_at):
            _set_last_message_at(conversation.pk, record.date)
            conversation.last_message_at = record.date
        if created and not quiet:
            kind = Kind.MESSAGE_OUT if record.is_outgoing else Kind.MESSAGE_IN
            record_event(
                kind,
                agent_id=agent.pk,
                conversation_id=conversation.pk,
                summary=f"{record.sender_name or record.sender_id}: {_preview(message, agent_id=agent.pk)}",
                data={"message_id": record.message_id, "peer_id": record.peer_id},
            )
        elif edited:
            record_event(
                Kind.MESSAGE_EDITED,
                agent_id=agent.pk,
                conversation_id=conversation.pk,
                summary=f"{record.sender_name} edited #{record.message_id}: {_preview(message, agent_id=agent.pk)}",
                data={"message_id": record.message_id},
            )
    return conversation, message, created


def message_record_sent(
    *,
    agent: Agent,
    conversation: Conversation,
    sent: SentMessage,
    text: str = "",
    reply_to: int | None = None,
    media: list[dict] | None = None,
    sender_name: str = "",
    redacted: bool = False,
) -> Message:
    """Mirror a message the agent just sent, so the next prompt sees it before the update arrives.

    `redacted` (a one-time sign-in code) stores a placeholder instead of the text, for good."""
    record = InboundMessage(
        peer_id=conversation.peer_id,
        chat_kind=conversation.kind,
        message_id=sent.message_id,
        date=sent.date,
        sender_id=agent.telegram_user_id,
        sender_name=sender_name or agent.name,
        sender_username=agent.telegram_username,
        is_outgoing=True,
        text=text,
        reply_to_id=reply_to,
        random_id=sent.random_id,
        topic_id=conversation.topic_id or None,
        # With the media, so the message_out event names what was sent (a sticker or photo has no text).
        media=tuple(MediaItem.from_part(part) for part in media or ()),
    )
    _, message, _ = message_upsert(agent=agent, record=record, redacted=redacted)
    if media and not message.media:
        Message.objects.filter(pk=message.pk).update(media=media)
        message.media = media
        message_stored.send(Message, conversation=conversation, message=message, created=False)
    return message


def messages_mark_deleted(*, agent: Agent, peer_id: int | None, message_ids: tuple[int, ...]) -> int:
    """Mark messages deleted. Telegram may not say which chat (private chats, basic groups): then every
    conversation of the agent holding those ids is marked, as Telegram's ids are per account there."""
    qs = Message.objects.filter(conversation__agent=agent, message_id__in=message_ids, deleted=False)
    if peer_id is not None:
        qs = qs.filter(conversation__peer_id=peer_id)
    rows = list(qs.values_list("pk", "conversation_id", "message_id"))
    if not rows:
        return 0
    Message.objects.filter(pk__in=[r[0] for r in rows]).update(deleted=True)
    messages_deleted.send(Message, agent_id=agent.pk, message_pks=[r[0] for r in rows], conversation_id=None)
    for conversation_id in {r[1] for r in rows}:
        ids = sorted(r[2] for r in rows if r[1] == conversation_id)
        record_event(
            Kind.MESSAGE_DELETED,
            agent_id=agent.pk,
            conversation_id=conversation_id,
            summary=f"deleted {', '.join(f'#{i}' for i in ids)}",
            data={"message_ids": ids},
        )
    return len(rows)


def message_set_reactions(
    *, agent: Agent, peer_id: int, message_id: int, reactions: tuple[ReactionInfo, ...]
) -> Message | None:
    """Record a message's reactions; returns the message, or None if the mirror does not have it."""
    message = (
        Message.objects.filter(
            conversation__agent=agent, conversation__peer_id=peer_id, message_id=message_id
        )
        .select_related("conversation")
        .first()
    )
    if message is None:
        return None
    message.reactions = [r.to_json() for r in reactions]
    Message.objects.filter(pk=message.pk).update(reactions=message.reactions)
    summary = " ".join(f"{r.emoji}×{r.count}" for r in reactions) or "reactions removed"
    record_event(
        Kind.REACTION,
        agent_id=agent.pk,
        conversation_id=message.conversation_id,
        summary=f"#{message_id}: {summary}",
        data={"message_id": message_id, "reactions": message.reactions},
    )
    return message


def conversations_mark_read(*, marks: list[tuple[Conversation, int]]) -> None:
    """Record that the agent has read each chat up to its message id (it did, just before planning),
    for many (conversation, message id) pairs in one statement."""
    if not marks:
        return
    update_by_pk(Conversation, "last_read_message_id", {c.pk: message_id for c, message_id in marks})
    for conversation, message_id in marks:
        conversation.last_read_message_id = message_id


def conversation_clear_mirror(*, conversation: Conversation) -> int:
    """After clear-conversation: the mirror's messages are deleted too, so the next prompt starts empty."""
    cleared = Message.objects.filter(conversation=conversation, deleted=False).update(deleted=True)
    messages_deleted.send(
        Message, agent_id=conversation.agent_id, message_pks=[], conversation_id=conversation.pk
    )
    return cleared


def _preview(message: Message, *, agent_id: int) -> str:
    if message.text:
        return message.text[:200]
    if message.media:
        return _media_preview(StoredMedia.from_part(message.media[0]), agent_id=agent_id)
    return ""


def _media_preview(part: MediaItem, *, agent_id: int) -> str:
    """A media part as the activity stream names it: "sticker SET NAME", or the kind and what the
    media shows (the catalog's description, the library's curated one) or else its file name; media
    with a duration with it ("voice note, 0:07")."""
    kind = part.media_kind or "media"
    if kind == "sticker":
        return " ".join(p for p in (kind, part.sticker_set_name, part.sticker_name) if p)
    unique_id = part.unique_id
    described = ""
    if unique_id:
        described = (
            MediaDescription.objects.filter(unique_id=unique_id)
            .exclude(description=None)
            .exclude(description="")
            .values_list("description", flat=True)
            .first()
            or LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id)
            .exclude(description="")
            .values_list("description", flat=True)
            .first()
            or ""
        )
    transcript = part.transcript  # what an agent's voice note says
    label = " ".join(described.split()) or " ".join(transcript.split()) or part.file_name
    if part.duration:  # a voice note, a video: as a person reads it, "voice note, 0:07: what it says"
        seconds = round(part.duration)
        word = "round video" if part.is_round else _MEDIA_WORDS.get(kind, kind)
        head = f"{word}, {seconds // 60}:{seconds % 60:02d}"
        return f"{head}: {label[:200]}" if label else head
    # Without a description yet (it is made after ingest), the kind alone: its id means nothing to a reader.
    return f"{_MEDIA_WORDS.get(kind, kind)} {label[:200]}".strip()


#: Media kinds as the activity stream writes them (others by their `MediaKind` value).
_MEDIA_WORDS = {"voice": "voice note", "video_note": "video note", "custom_emoji": "custom emoji"}
