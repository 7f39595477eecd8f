"""Writing to the sandbox as a person would: the browser sandbox chat and `manage.py sandbox` call these.

The sandbox plays Telegram's part. People ("You", "Alice") and agents are `SandboxUser` rows; a DM is a
two-member `SandboxChat`, a group is found by its title. Every change appends a `SandboxUpdate`, the
update stream `SandboxTransport` reads.

Titles are not unique (they are not on Telegram either), and a title is looked up only among the
chats within the caller's grants: `within` is the set of agent ids the caller may see (None: every
agent, as for `manage.py sandbox` and owners), and a chat is within it when every agent in the chat
is. A title that names only groups beyond the caller's grants starts a new group of that title, so a
title never joins an agent to a chat of an agent the caller cannot see (docs/dashboard.md, "sandbox groups").
"""

from __future__ import annotations

import datetime as dt
import re
import zlib
from collections.abc import Collection
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import TELEGRAM_SERVICE_USER_ID
from conversations.services.wake import wake_gateways_on_commit
from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)
from sandbox.selectors import sandbox_chat_of, sandbox_chats_within

#: Agents' sandbox user ids live above this, people's below; they never collide.
AGENT_USER_ID_BASE = 7_000_000_000
PERSON_USER_ID_BASE = 1_000_000
#: Group peer ids are negative, like Telegram's basic groups; DM chats get a private positive range.
GROUP_PEER_ID_BASE = -1_000_000
DM_CHAT_PEER_ID_BASE = 900_000_000_000


class SandboxError(ValueError):
    """Bad input to the sandbox; the message says what to fix."""


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "", name.lower().replace(" ", "_"))[:32]


def sandbox_user_for_agent(*, agent: Agent) -> SandboxUser:
    """The agent's own sandbox identity, created on first use."""
    user = SandboxUser.objects.filter(agent=agent).first()
    if user is not None:
        return user
    try:
        with transaction.atomic():
            return SandboxUser.objects.create(
                user_id=AGENT_USER_ID_BASE + agent.pk,
                name=agent.name,
                username=agent.telegram_username or _slug(agent.name),
                agent=agent,
            )
    except IntegrityError:
        return SandboxUser.objects.get(agent=agent)


def sandbox_person(*, name: str, bot: bool = False) -> SandboxUser:
    """A person (not an agent) by display name, created on first use; `bot` makes (or finds) a bot."""
    name = (name or "").strip()
    if not name:
        raise SandboxError("a sandbox sender needs a name (--as NAME)")
    user = SandboxUser.objects.filter(agent__isnull=True, name=name).first()
    if user is not None:
        if user.is_bot != bot:
            what, other = ("a bot", "a person") if user.is_bot else ("a person", "a bot")
            raise SandboxError(
                f"sandbox user {name!r} is {what}, not {other}: pick another name (--as NAME) for {other}"
            )
        return user
    # A stable id derived from the name; probe upwards on the rare collision.
    candidate = PERSON_USER_ID_BASE + zlib.crc32(name.encode()) % 1_000_000_000
    for offset in range(50):
        try:
            with transaction.atomic():
                return SandboxUser.objects.create(
                    user_id=candidate + offset, name=name, username=_slug(name), is_bot=bot
                )
        except IntegrityError:
            existing = SandboxUser.objects.filter(agent__isnull=True, name=name).first()
            if existing is not None:
                return existing
    raise SandboxError(f"could not allocate a sandbox user id for {name!r}")


def sandbox_user_with_id(*, user_id: int, name: str = "", bot: bool = False) -> SandboxUser:
    """The sandbox user with this Telegram user id (777000 is Telegram's service account), created on
    first use and named `name` (default: "Telegram" for 777000, "User <id>" otherwise)."""
    if user_id <= 0:
        raise SandboxError(f"--user-id {user_id}: a user id is a positive number, e.g. 777000")
    user = SandboxUser.objects.filter(user_id=user_id).first()
    if user is not None:
        if user.agent_id is not None:
            raise SandboxError(f"--user-id {user_id} is the agent {user.name!r}: pick a person's or bot's id")
        if bot and not user.is_bot:
            raise SandboxError(f"--user-id {user_id} is {user.name!r}, a person, not a bot: drop --bot")
        return user
    if not name:
        name = "Telegram" if user_id == TELEGRAM_SERVICE_USER_ID else f"User {user_id}"
    with transaction.atomic():
        user, _ = SandboxUser.objects.get_or_create(
            user_id=user_id, defaults={"name": name, "username": _slug(name), "is_bot": bot}
        )
    return user


def _ensure_member(chat: SandboxChat, user: SandboxUser) -> None:
    SandboxMember.objects.get_or_create(chat=chat, user=user)


def _next_peer_id(*, kind: str, offset: int) -> int:
    highest = (SandboxChat.objects.aggregate(m=Max("id"))["m"] or 0) + 1 + offset
    if kind == SandboxChat.Kind.GROUP:
        return GROUP_PEER_ID_BASE - highest
    return DM_CHAT_PEER_ID_BASE + highest


def _create_chat(*, kind: str, title: str) -> SandboxChat:
    for offset in range(20):
        try:
            with transaction.atomic():
                return SandboxChat.objects.create(
                    kind=kind, title=title, peer_id=_next_peer_id(kind=kind, offset=offset)
                )
        except IntegrityError:
            continue
    raise SandboxError(f"could not allocate a peer id for sandbox {kind} {title!r}")


def sandbox_dm_between(*, a: SandboxUser, b: SandboxUser) -> SandboxChat:
    """The DM between two users; between a user and itself, its Saved Messages (a DM of one member)."""
    chat = sandbox_saved_chat(user=a) if a.pk == b.pk else None
    if a.pk != b.pk:
        chats = SandboxChat.objects.filter(kind=SandboxChat.Kind.DM, members=a).filter(members=b)
        chat = chats.order_by("id").first()
    if chat is None:
        title = "Saved Messages" if a.pk == b.pk else f"{a.name} & {b.name}"
        chat = _create_chat(kind=SandboxChat.Kind.DM, title=title)
        _ensure_member(chat, a)
        _ensure_member(chat, b)
    return chat


def sandbox_group(
    *, title: str, members: list[SandboxUser], within: Collection[int] | None = None
) -> SandboxChat:
    """The group with this title within the caller's grants (`within`, see the module docstring),
    created on first use, with `members` added.

    Among several groups of the title, the oldest one an agent of `members` is already in wins, then
    the oldest; a group with an agent beyond `within` is never chosen (a new group is started)."""
    title = title.strip()
    if not title:
        raise SandboxError("a sandbox group needs a title (--group TITLE)")
    groups = sandbox_chats_within(
        SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP, title=title), within
    ).order_by("id")
    agents = [user for user in members if user.agent_id is not None]
    chat = groups.filter(members__in=agents).first() if agents else None
    if chat is None:
        chat = groups.first()
    if chat is None:
        chat = _create_chat(kind=SandboxChat.Kind.GROUP, title=title)
    for user in members:
        _ensure_member(chat, user)
    return chat


#: Telegram's longest topic title.
TOPIC_TITLE_MAX = 128


def sandbox_topic(*, chat: SandboxChat, title: str) -> SandboxTopic:
    """The topic of `chat` titled `title`, created on first use; the group becomes a forum.

    A new topic takes the chat's next message id, as on Telegram, where a topic's id is the id of the
    message that created it (the sandbox keeps no such message: the id is simply used up)."""
    title = (title or "").strip()
    if not title or len(title) > TOPIC_TITLE_MAX:
        raise SandboxError(
            f"topic title {title!r}: give 1 to {TOPIC_TITLE_MAX} characters (--topic NAME), e.g. --topic Seeds"
        )
    if chat.kind != SandboxChat.Kind.GROUP:
        raise SandboxError(f"{chat} is a direct message: topics live in groups; add --group TITLE")
    topic = SandboxTopic.objects.filter(chat=chat, title=title).first()
    if topic is not None:
        return topic
    try:
        with transaction.atomic():
            SandboxChat.objects.filter(pk=chat.pk).update(
                forum=True, next_message_id=F("next_message_id") + 1
            )
            topic_id = SandboxChat.objects.values_list("next_message_id", flat=True).get(pk=chat.pk) - 1
            topic = SandboxTopic.objects.create(chat=chat, topic_id=topic_id, title=title)
    except IntegrityError:
        return SandboxTopic.objects.get(chat=chat, title=title)
    chat.forum = True
    return topic


#: The `SandboxMember.cannot_write` values, as `manage.py sandbox rights --cannot-write` names them.
CANNOT_WRITE_CHOICES = ("read_only", "restricted", "banned")


def sandbox_set_rights(*, agent: Agent, group: str, cannot_write: str) -> SandboxChat:
    """An admin of the group changes the agent's right to write there: `cannot_write` is one of
    CANNOT_WRITE_CHOICES, or "" (it may write again). The agent sees it with the group's next message."""
    if cannot_write and cannot_write not in CANNOT_WRITE_CHOICES:
        raise SandboxError(
            f"--cannot-write {cannot_write}: use one of {', '.join(CANNOT_WRITE_CHOICES)}, or none to lift it"
        )
    me = sandbox_user_for_agent(agent=agent)
    chat = (
        SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP, title=group.strip(), members=me)
        .order_by("id")
        .first()
    )
    if chat is None:
        raise SandboxError(f"{agent.name} is in no sandbox group titled {group!r}: say something there first")
    SandboxMember.objects.filter(chat=chat, user=me).update(cannot_write=cannot_write)
    return chat


def sandbox_chat_for(
    *, agent: Agent, as_name: str = "You", group: str | None = None, within: Collection[int] | None = None
) -> SandboxChat:
    """The DM between `as_name` and the agent, or the group titled `group` (within the caller's
    grants, `within`) with both in it."""
    me = sandbox_user_for_agent(agent=agent)
    person = sandbox_person(name=as_name)
    if group:
        return sandbox_group(title=group, members=[me, person], within=within)
    return sandbox_dm_between(a=person, b=me)


def sandbox_find_chat(
    *, agent: Agent, as_name: str = "You", group: str | None = None, within: Collection[int] | None = None
) -> SandboxChat | None:
    """Like `sandbox_chat_for`, but only finds: None when the person, the agent or the chat is missing,
    or the chat is beyond the caller's grants (`within`)."""
    me = SandboxUser.objects.filter(agent=agent).first()
    person = SandboxUser.objects.filter(agent__isnull=True, name=(as_name or "").strip()).first()
    if me is None or person is None:
        return None
    if group:
        chats = SandboxChat.objects.filter(kind=SandboxChat.Kind.GROUP, title=group.strip())
    else:
        chats = SandboxChat.objects.filter(kind=SandboxChat.Kind.DM)
    chats = sandbox_chats_within(chats, within)
    return chats.filter(members=me).filter(members=person).order_by("id").first()


def sandbox_post(
    *,
    chat: SandboxChat,
    sender: SandboxUser,
    text: str = "",
    reply_to: int | None = None,
    media: list[dict[str, Any]] | None = None,
    random_id: int | None = None,
    topic_id: int | None = None,
) -> tuple[SandboxMessage, bool]:
    """Append a message to a chat (to one of its topics: `topic_id`); returns (message, created).

    A repeated (sender, random_id) returns the earlier message and creates nothing, as Telegram does.
    Steps: look up the random_id; take the chat's next message id with an atomic increment; insert the
    message and its update row; on a racing duplicate random_id, fall back to the earlier message.
    """
    if random_id is not None:
        earlier = SandboxMessage.objects.filter(sender=sender, random_id=random_id).first()
        if earlier is not None:
            return earlier, False
    if reply_to is not None and not SandboxMessage.objects.filter(chat=chat, message_id=reply_to).exists():
        raise SandboxError(f"message {reply_to} does not exist in {chat}: check the --reply-to id")
    try:
        with transaction.atomic():
            SandboxChat.objects.filter(pk=chat.pk).update(next_message_id=F("next_message_id") + 1)
            message_id = SandboxChat.objects.values_list("next_message_id", flat=True).get(pk=chat.pk) - 1
            message = SandboxMessage.objects.create(
                chat=chat,
                message_id=message_id,
                sender=sender,
                date=now(),
                text=text,
                reply_to_id=reply_to,
                media=media or [],
                random_id=random_id,
                topic_id=topic_id or None,
            )
            SandboxUpdate.objects.create(
                chat=chat,
                kind=SandboxUpdate.Kind.NEW_MESSAGE,
                message_id=message_id,
                actor=sender,
                created=message.date,
            )
            # Sending ends the sender's typing indicator and reads the chat up to the new message.
            SandboxMember.objects.filter(chat=chat, user=sender).update(
                typing_until=None, read_up_to=message_id
            )
            # The gateways holding the chat's agents ingest it at once (a turn's work).
            wake_gateways_on_commit(
                SandboxMember.objects.filter(chat=chat, user__agent__isnull=False).values_list(
                    "user__agent_id", flat=True
                ),
                turn=True,
            )
    except IntegrityError:
        if random_id is None:
            raise
        return SandboxMessage.objects.get(sender=sender, random_id=random_id), False
    return message, True


def sandbox_saved_chat(*, user: SandboxUser) -> SandboxChat | None:
    """The user's Saved Messages (its DM with itself), if it ever saved something."""
    return (
        SandboxChat.objects.annotate(size=Count("members", distinct=True))  # before the filter on members
        .filter(kind=SandboxChat.Kind.DM, size=1, members=user)
        .order_by("id")
        .first()
    )


def sandbox_save(*, agent: Agent, media: list[dict[str, Any]], text: str = "") -> SandboxMessage:
    """The agent's account keeps a message in its Saved Messages (as its owner would on Telegram)."""
    me = sandbox_user_for_agent(agent=agent)
    message, _ = sandbox_post(chat=sandbox_dm_between(a=me, b=me), sender=me, text=text, media=media)
    return message


def sandbox_say(
    *,
    agent: Agent,
    text: str = "",
    as_name: str = "You",
    group: str | None = None,
    reply_to: int | None = None,
    media: list[dict[str, Any]] | None = None,
    user_id: int | None = None,
    bot: bool = False,
    topic: str | None = None,
    within: Collection[int] | None = None,
    chat_id: int | None = None,
) -> SandboxMessage:
    """A person sends a message to the agent (in their DM, or in a group the agent is in).

    `user_id` writes as the user with that id (e.g. 777000, Telegram's service account); `bot` writes
    as a bot account; `topic` writes in the group's topic of that title (created on first use, which
    makes the group a forum); `within` is the caller's grants (see the module docstring); `chat_id`
    names the chat by its id instead of `group` (the agent in it, within the grants; in a DM, only
    its partner writes)."""
    if topic and not group:
        raise SandboxError(f"--topic {topic!r} needs --group TITLE: topics live in groups")
    if not text and not media:
        raise SandboxError("a sandbox message needs text or media")
    if user_id is None:
        sender = sandbox_person(name=as_name, bot=bot)
    else:
        sender = sandbox_user_with_id(user_id=user_id, name=as_name, bot=bot)
    me = sandbox_user_for_agent(agent=agent)
    if chat_id is not None:
        chat = _chat_to_write(agent=agent, chat_id=chat_id, sender=sender, within=within)
    elif group:
        chat = sandbox_group(title=group, members=[me, sender], within=within)
    else:
        chat = sandbox_dm_between(a=sender, b=me)
    topic_id = sandbox_topic(chat=chat, title=topic).topic_id if topic else None
    message, _ = sandbox_post(
        chat=chat, sender=sender, text=text, reply_to=reply_to, media=media, topic_id=topic_id
    )
    return message


def _chat_to_write(
    *, agent: Agent, chat_id: int, sender: SandboxUser, within: Collection[int] | None
) -> SandboxChat:
    chat = sandbox_chat_of(agent=agent, chat_id=chat_id, within=within)
    if chat is None:
        raise SandboxError(
            f"chat_id {chat_id}: {agent.name} is in no sandbox chat of that id that you may see; "
            "give the chat_id of one of its messages, or a group title"
        )
    if chat.kind == SandboxChat.Kind.GROUP:
        _ensure_member(chat, sender)
    elif not chat.members.filter(pk=sender.pk).exists():
        raise SandboxError(
            f"chat_id {chat_id} is {agent.name}'s direct message with someone else: "
            "write as that person (as_name), or leave chat_id out"
        )
    return chat


def sandbox_typing(*, agent: Agent, as_name: str = "You", seconds: float = 5.0) -> SandboxChat:
    """`as_name` types in their DM with the agent for `seconds` (0 stops), as Telegram's typing update."""
    if not 0 <= seconds <= 600:
        raise SandboxError(f"--seconds {seconds:g}: give 0 (stop typing) to 600 seconds")
    person = sandbox_person(name=as_name)
    chat = sandbox_dm_between(a=person, b=sandbox_user_for_agent(agent=agent))
    at = now()
    until = at + dt.timedelta(seconds=seconds) if seconds else None
    with transaction.atomic():
        SandboxMember.objects.filter(chat=chat, user=person).update(typing_until=until)
        SandboxUpdate.objects.create(chat=chat, kind=SandboxUpdate.Kind.TYPING, actor=person, created=at)
        wake_gateways_on_commit()
    return chat


def sandbox_mark_unread(
    *, agent: Agent, as_name: str = "You", group: str | None = None, within: Collection[int] | None = None
) -> SandboxChat:
    """The agent's account marks its chat with `as_name` (or the group) unread, as a person holding the
    account would on their phone: a callout the agent answers (docs/engine.md, "Attention")."""
    chat = sandbox_find_chat(agent=agent, as_name=as_name, group=group, within=within)
    if chat is None:
        where = f"group {group!r}" if group else f"a chat with {as_name!r}"
        raise SandboxError(
            f"{agent.name} has no {where} to mark unread: say something there first (`sandbox say`)"
        )
    me = sandbox_user_for_agent(agent=agent)
    with transaction.atomic():
        SandboxMember.objects.filter(chat=chat, user=me).update(unread_mark=True)
        SandboxUpdate.objects.create(chat=chat, kind=SandboxUpdate.Kind.UNREAD_MARK, actor=me, created=now())
        wake_gateways_on_commit()
    return chat


def sandbox_set_reaction(*, message: SandboxMessage, user: SandboxUser, emoji: str) -> SandboxMessage:
    """Set `user`'s reaction on `message` (one per user, as in Telegram); empty emoji removes it.

    Reactions on someone else's message are unread for the author until they read the chat.
    """
    with transaction.atomic():
        message = SandboxMessage.objects.select_for_update().get(pk=message.pk)
        reactions: list[dict[str, Any]] = []
        for entry in message.reactions:
            users = [u for u in entry.get("user_ids", []) if u != user.user_id]
            if users:
                reactions.append({**entry, "user_ids": users, "count": len(users)})
        if emoji:
            unread = message.sender_id != user.pk
            for entry in reactions:
                if entry["emoji"] == emoji:
                    entry["user_ids"] = [*entry["user_ids"], user.user_id]
                    entry["count"] = len(entry["user_ids"])
                    entry["unread"] = entry.get("unread", False) or unread
                    break
            else:
                reactions.append({"emoji": emoji, "count": 1, "user_ids": [user.user_id], "unread": unread})
        message.reactions = reactions
        message.save(update_fields=["reactions"])
        SandboxUpdate.objects.create(
            chat=message.chat,
            kind=SandboxUpdate.Kind.REACTION,
            message_id=message.message_id,
            actor=user,
            created=now(),
        )
        wake_gateways_on_commit()
    return message


def sandbox_react(
    *,
    agent: Agent,
    message_id: int,
    emoji: str,
    as_name: str = "You",
    group: str | None = None,
    within: Collection[int] | None = None,
) -> SandboxMessage:
    """A person reacts to a message of their chat with the agent (within the caller's grants)."""
    chat = sandbox_chat_for(agent=agent, as_name=as_name, group=group, within=within)
    message = SandboxMessage.objects.filter(chat=chat, message_id=message_id).first()
    if message is None:
        raise SandboxError(
            f"message {message_id} does not exist in {chat}: run `sandbox show {agent.name} --ids` to list ids"
        )
    return sandbox_set_reaction(message=message, user=sandbox_person(name=as_name), emoji=emoji)


def voice_line(part: dict[str, Any]) -> str:
    """A voice note in `sandbox show`: `(voice 3.2 s) transcript`: an agent's note carries what it
    says; a person's shows its transcript once one exists."""
    from media_catalog.models import MediaDescription

    duration = part.get("duration")
    label = f"(voice {duration:.1f} s)" if isinstance(duration, int | float) else "(voice)"
    own = " ".join(str(part.get("transcript") or "").split())
    if own:
        return f"{label} {own}"
    row = MediaDescription.objects.filter(
        unique_id=part.get("unique_id") or "",
        status__in=[MediaDescription.Status.OK, MediaDescription.Status.CURATED],
    ).first()
    transcript = " ".join((row.description or "").split()) if row else ""
    return f"{label} {transcript}" if transcript else label


def _describe_media(part: dict[str, Any]) -> str:
    kind = part.get("media_kind", "media")
    if kind == "voice":
        return voice_line(part)
    if kind == "sticker":
        name = part.get("sticker_name") or "?"
        set_name = part.get("sticker_set_name")
        return f"(sticker {name} from {set_name})" if set_name else f"(sticker {name})"
    caption = part.get("description") or part.get("file_name") or ""
    return f"({kind}{': ' + caption if caption else ''})"


def sandbox_message_line(message: SandboxMessage, *, names: dict[int, str], with_ids: bool = False) -> str:
    """One transcript line, `SENDER: text`, with media, replies and reactions in words."""
    prefix = f"#{message.message_id} " if with_ids else ""
    if message.deleted:
        return f"{prefix}{message.sender.name}: (deleted)"
    pieces = [_describe_media(part) for part in message.media]
    if message.text:
        pieces.append(message.text)
    body = " ".join(pieces)
    if message.reply_to_id:
        body = f"(in reply to #{message.reply_to_id}) {body}"
    if message.reactions:
        words = []
        for entry in message.reactions:
            who = ", ".join(names.get(uid, str(uid)) for uid in entry.get("user_ids", []))
            words.append(f"{entry['emoji']} from {who}" if who else entry["emoji"])
        body = f"{body} (reactions: {'; '.join(words)})"
    return f"{prefix}{message.sender.name}: {body}"


def sandbox_transcript(
    *,
    agent: Agent,
    as_name: str = "You",
    group: str | None = None,
    with_ids: bool = False,
    topic: str | None = None,
) -> list[str]:
    """The chat as `SENDER: text` lines, oldest first; empty when the chat does not exist.

    In a forum, each line starts with its topic (`[Seeds] `, General's lines with none); with `topic`,
    only that topic's lines are shown, without the prefix. Reading never creates anything: a person,
    an agent identity or a chat that is not there yet means there is nothing to show."""
    chat = sandbox_find_chat(agent=agent, as_name=as_name, group=group)
    if chat is None:
        return []
    names = dict(SandboxUser.objects.filter(chats=chat).values_list("user_id", "name"))
    messages = SandboxMessage.objects.filter(chat=chat).select_related("sender").order_by("message_id")
    titles = dict(SandboxTopic.objects.filter(chat=chat).values_list("topic_id", "title"))
    if topic:
        wanted = next((i for i, t in titles.items() if t == topic.strip()), None)
        if wanted is None:
            return []
        messages = messages.filter(topic_id=wanted)
        return [sandbox_message_line(m, names=names, with_ids=with_ids) for m in messages]
    return [
        (f"[{titles[m.topic_id]}] " if m.topic_id in titles else "")
        + sandbox_message_line(m, names=names, with_ids=with_ids)
        for m in messages
    ]
