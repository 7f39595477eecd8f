"""Attention on Telegram's wire: unread marks, mention and reaction counts, as the stand-in serves them
to the real Telethon transport (messages.getDialogs, UpdateDialogUnreadMark, the read requests)."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from conversations.transport.base import DialogUnreadMark, NewMessage

from . import test_standin_transport as base
from .test_standin_transport import connected, next_updates

# The stand-in and its signed-in account, as the transport tests set them up (pytest fixtures).
standin = base.standin
world = base.world


def test_a_dialog_marked_unread_on_another_device_arrives_and_reading_clears_it(world):
    standin, agent, me, bob = world
    dm = standin.world.dm_key(me.id, bob.id)

    async def run():
        transport = await connected(agent)
        standin.run(standin.world.send, bob.id, dm, "are you there?")
        [new] = await next_updates(transport, NewMessage)
        standin.run(standin.world.mark_unread, me.id, dm)
        [mark] = await next_updates(transport, DialogUnreadMark)
        marked = {d.peer_id: d.extra for d in await transport.dialogs()}[bob.id]
        await transport.mark_read(bob.id, new.message.message_id)
        after = {d.peer_id: d.extra for d in await transport.dialogs()}[bob.id]
        await transport.disconnect()
        return mark, marked, after

    mark, marked, after = async_to_sync(run)()
    assert (mark.peer_id, mark.unread) == (bob.id, True)
    assert (marked["unread_mark"], marked["unread_count"]) == (True, 1)
    assert marked["top_date"] is not None
    assert (after["unread_mark"], after["unread_count"]) == (False, 0)
    assert not standin.world.users[me.id].unread_mark[dm]


def test_unread_mentions_and_reactions_are_counted_and_cleared_by_reading(world):
    standin, agent, me, bob = world
    group = standin.run(standin.world.create_group, title="Choir", member_ids=[me.id, bob.id])
    key = ("chat", group.id)

    async def run():
        transport = await connected(agent)
        sent = await transport.send_text(-group.id, "rehearsal at 7", random_id=5501)
        standin.run(standin.world.react, bob.id, key, sent.message_id, "👍")
        mention, _pts, _new = standin.run(standin.world.send, bob.id, key, "@heidi can you bring the scores?")
        await next_updates(transport, NewMessage)
        counted = {d.peer_id: d.extra for d in await transport.dialogs()}[-group.id]
        await transport.mark_read(-group.id, mention.id)
        after = {d.peer_id: d.extra for d in await transport.dialogs()}[-group.id]
        await transport.disconnect()
        return counted, after

    counted, after = async_to_sync(run)()
    assert (counted["unread_mentions_count"], counted["unread_reactions_count"]) == (1, 1)
    assert (after["unread_mentions_count"], after["unread_reactions_count"]) == (0, 0)
    assert [c.error for c in standin.calls_of("messages.readMentions")][-1:] == [""]
