"""A scenario's `[backlog]`: a long earlier chat seeded before the first turn (spec.py, `Backlog`).

`seed` runs in a child set up like manage.py's (`Stage.seed_backlog`). The sandbox gets the messages (so
its next message id follows them and the persona has read them all) and Cindy's mirror gets them through
the ingest service the gateway uses (`message_upsert`), which keeps the recall index current. On the
MTProto stand-in (`TelegramStage.seed_backlog`) the harness writes them into the DM's history on
"Telegram" itself, read by the persona's account, and `mirror` gives Cindy's mirror the same ids. A
summary covers every backlog message, as a conversation that long would have: no summarization turn
is due, and the history starts after the backlog.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction

from agents.models import Agent
from cindy_site.clock import now
from conversations.services.ingest import message_upsert
from conversations.transport.base import InboundMessage
from engine.tests.scenarios.spec import Backlog
from memory.models import Summary
from sandbox.models import SandboxChat, SandboxMember, SandboxMessage
from sandbox.services.chats import sandbox_dm_between, sandbox_person, sandbox_user_for_agent

#: What the seeded summary says: nothing of the planted messages, so that only recall can bring them.
SUMMARY = "A long, friendly earlier chat about everyday things: the weather, trains and errands."
BATCH = 250


def dated(*, count: int, lines: list[str], planted: dict[int, str]) -> list[tuple[int, dt.datetime, str]]:
    """(n, date, text) of backlog messages 1..count (spec.py's `Backlog.text`: `planted` at their
    positions, `lines` cycled elsewhere), a minute apart, ending a week ago: old history, long past the
    window in which a quiet chat is consolidated (engine/consolidation.py), so no scenario's lowered
    quiet time gives the backlog's chat a consolidation turn of its own."""
    backlog = Backlog(count, tuple(lines), tuple(planted.items()))
    first = now() - dt.timedelta(days=7, minutes=count)
    return [(n, first + dt.timedelta(minutes=n), backlog.text(n)) for n in range(1, count + 1)]


def seed(*, persona: str, person: str, count: int, lines: list[str], planted: dict[int, str]) -> None:
    """Messages 1..count of the sandbox DM between `person` (a sandbox name) and `persona` (`dated`):
    odd ones the person's, even ones the persona's, read by the persona, then Cindy's mirror (`mirror`)."""
    agent = Agent.objects.get(name=persona)
    me = sandbox_user_for_agent(agent=agent)
    them = sandbox_person(name=person)
    chat = sandbox_dm_between(a=them, b=me)
    messages = dated(count=count, lines=lines, planted=planted)
    with transaction.atomic():
        SandboxMessage.objects.bulk_create(
            SandboxMessage(
                chat=chat, message_id=number, sender=me if number % 2 == 0 else them, date=date, text=text
            )
            for number, date, text in messages
        )
        SandboxChat.objects.filter(pk=chat.pk).update(next_message_id=count + 1)
        SandboxMember.objects.filter(chat=chat).update(read_up_to=count)
    mirror(
        persona=persona,
        peer=(them.user_id, them.name, them.username),
        own=(me.user_id, me.name, me.username),
        messages=[(number, number, date, text) for number, date, text in messages],
    )


def mirror(
    *,
    persona: str,
    peer: tuple[int, str, str],
    own: tuple[int, str, str],
    messages: list[tuple[int, int, dt.datetime, str]],
) -> None:
    """Cindy's mirror of a backlog, through the ingest service the gateway uses (`message_upsert`, which
    keeps the recall index current): `messages` as (n, message id, date, text), odd n the person's
    (`peer`: user id, name, username), even n the persona's (`own`); then a summary covering them all."""
    agent = Agent.objects.get(name=persona)
    for start in range(0, len(messages), BATCH):
        with transaction.atomic():
            for number, message_id, date, text in messages[start : start + BATCH]:
                sender_id, sender_name, sender_username = own if number % 2 == 0 else peer
                message_upsert(
                    agent=agent,
                    record=InboundMessage(
                        peer_id=peer[0],
                        chat_kind="dm",
                        message_id=message_id,
                        date=date,
                        sender_id=sender_id,
                        sender_name=sender_name,
                        sender_username=sender_username,
                        is_outgoing=number % 2 == 0,
                        text=text,
                        chat_title=peer[1],
                        chat_username=peer[2],
                    ),
                )
    Summary.objects.create(
        agent=agent,
        channel_id=peer[0],
        content=SUMMARY,
        first_message_id=messages[0][1],
        last_message_id=messages[-1][1],
        first_message_date=messages[0][2].date(),
        last_message_date=messages[-1][2].date(),
        created=now(),
    )
