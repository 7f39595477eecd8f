"""A scenario's `[backlog]`: a long earlier chat seeded before the first turn (spec.py, `Backlog`).

`seed` runs in the stage's console child (`Stage.seed_backlog`). The sandbox gets the messages (so its
next message id follows them and the persona has read them all) and Cindy's mirror gets them through
the ingest service the gateway uses (`message_upsert`), which keeps the recall index current. A
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


def seed(*, persona: str, person: str, count: int, lines: list[str], planted: dict[int, str]) -> None:
    """Messages 1..count of the DM between `person` (a sandbox name) and `persona` (spec.py's
    `Backlog.text`: `planted` at their positions, `lines` cycled elsewhere): odd ones the person's,
    even ones the persona's, a minute apart, ending a week ago: old history, long past the window in
    which a quiet chat is consolidated (engine/consolidation.py), so no scenario's lowered quiet time
    gives the backlog's chat a consolidation turn of its own."""
    texts = [Backlog(count, tuple(lines), tuple(planted.items())).text(n) for n in range(1, count + 1)]
    agent = Agent.objects.get(name=persona)
    me = sandbox_user_for_agent(agent=agent)
    them = sandbox_person(name=person)
    chat = sandbox_dm_between(a=them, b=me)
    count = len(texts)
    first = now() - dt.timedelta(days=7, minutes=count)
    dated = [
        (number, first + dt.timedelta(minutes=number), text) for number, text in enumerate(texts, start=1)
    ]
    with transaction.atomic():
        SandboxMessage.objects.bulk_create(
            SandboxMessage(
                chat=chat, message_id=number, sender=me if number % 2 == 0 else them, date=date, text=text
            )
            for number, date, text in dated
        )
        SandboxChat.objects.filter(pk=chat.pk).update(next_message_id=count + 1)
        SandboxMember.objects.filter(chat=chat).update(read_up_to=count)
    for start in range(0, count, BATCH):
        with transaction.atomic():
            for number, date, text in dated[start : start + BATCH]:
                sender = me if number % 2 == 0 else them
                message_upsert(
                    agent=agent,
                    record=InboundMessage(
                        peer_id=them.user_id,
                        chat_kind="dm",
                        message_id=number,
                        date=date,
                        sender_id=sender.user_id,
                        sender_name=sender.name,
                        sender_username=sender.username,
                        is_outgoing=sender.pk == me.pk,
                        text=text,
                        chat_title=them.name,
                        chat_username=them.username,
                    ),
                )
    Summary.objects.create(
        agent=agent,
        channel_id=them.user_id,
        content=SUMMARY,
        first_message_id=1,
        last_message_id=count,
        first_message_date=dated[0][1].date(),
        last_message_date=dated[-1][1].date(),
        created=now(),
    )
