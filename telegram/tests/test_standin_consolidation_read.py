"""A consolidation turn reads nothing on Telegram's wire: the planning dispatch (engine/dispatch.py)
syncs its group but sends no read request, so the group's chatter stays unread for the account on the
MTProto stand-in; a reply turn's dispatch reads it as before. The real Telethon transport, in this
process, against the loopback stand-in."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from asgiref.sync import async_to_sync, sync_to_async

from conversations.models import Conversation, TaskGraph, TaskNode
from conversations.services.graphs import graph_replan
from conversations.services.nodes import new_claim_token, node_complete, nodes_claim
from engine.clients import AgentClient
from engine.consolidation import UNREAD_PARAM, consolidations_start_due
from engine.dispatch import PlanningDispatch
from engine.ingest import ingest_history
from engine.tests.cast import teach

from . import test_standin_transport as base
from .conftest import GATEWAY
from .test_standin_transport import connected

# The stand-in and its signed-in account, as the transport tests set them up (pytest fixtures).
standin = base.standin
world = base.world


def _claimed(graph: TaskGraph) -> tuple[TaskNode, str]:
    owner = new_claim_token(GATEWAY)
    [node] = nodes_claim(node_ids=[graph.nodes.get(kind="received").pk], owner=owner)
    return node, owner


def test_a_consolidation_turn_leaves_the_group_unread_and_a_reply_turn_reads_it(world, settings):
    standin, agent, me, bob = world
    teach(agent, "Task-Consolidate")
    settings.CINDY_CONSOLIDATE_QUIET_SECONDS = 60
    group = standin.run(standin.world.create_group, title="Choir", member_ids=[me.id, bob.id])
    key = ("chat", group.id)
    standin.run(standin.world.send, bob.id, key, "rehearsal moved to Friday")
    standin.run(standin.world.send, bob.id, key, "and the altos need new folders")

    async def run():
        transport = await connected(agent)
        client = AgentClient(agent=agent, transport=transport, connected=True)
        context = SimpleNamespace(clients={agent.pk: client}, enqueue=lambda node_id, owner: None)
        dispatch = PlanningDispatch(context)
        records = await transport.history(-group.id, limit=10)
        await sync_to_async(ingest_history)(agent_id=agent.pk, records=records, trigger=False)
        conversation = await sync_to_async(Conversation.objects.get)(agent=agent, peer_id=-group.id)
        at = conversation.last_message_at + dt.timedelta(seconds=61)
        started = await sync_to_async(consolidations_start_due)(agents=[agent], at=at)
        graph = await sync_to_async(TaskGraph.objects.get)(conversation=conversation)
        node, owner = await sync_to_async(_claimed)(graph)
        await dispatch.dispatch([(node, owner)])
        after_consolidation = standin.world.unread(me.id, key)
        mirror_read = await sync_to_async(
            lambda: Conversation.objects.get(pk=conversation.pk).last_read_message_id
        )()

        await sync_to_async(node_complete)(node_id=node.pk, owner=owner)
        reply = await sync_to_async(graph_replan)(
            conversation=conversation,
            trigger=TaskGraph.Trigger.MESSAGE,
            target_message_id=records[0].message_id,
        )
        node, owner = await sync_to_async(_claimed)(reply)
        await dispatch.dispatch([(node, owner)])
        after_reply = standin.world.unread(me.id, key)
        await transport.disconnect()
        return started, graph, node, after_consolidation, mirror_read, after_reply

    started, graph, reply_node, after_consolidation, mirror_read, after_reply = async_to_sync(run)()
    assert started == 1 and graph.trigger == TaskGraph.Trigger.CONSOLIDATE
    assert graph.nodes.get(kind="received").params == {UNREAD_PARAM: True}
    assert after_consolidation == 2, "the consolidation turn read the group's chatter"
    assert mirror_read is None, "nor does the mirror record a read"
    assert not reply_node.params.get(UNREAD_PARAM)
    assert after_reply == 0, "a reply turn reads the chat before planning, as before"
    assert Conversation.objects.get(peer_id=-group.id).last_read_message_id == max(
        m.id for m in standin.world.history(key)
    )
