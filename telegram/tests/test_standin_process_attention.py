"""Attention with the real `runagents` on the Telegram stand-in: a muted group's callouts, a dialog
marked unread, and a message whose update was lost, found by the unread scan and answered once."""

from __future__ import annotations

import pytest

from engine.tests.processes import plan, wait_for

from . import test_standin_process as base
from .test_standin_process import logged_in_gateway, stop, texts_from

pytestmark = pytest.mark.slow

# The gateway test's child database, a Telegram agent (Tess) and the stand-in (pytest fixtures).
child_template = base.child_template
tess_template = base.tess_template
telegram = base.telegram

MUTED_FOR_EVER = 2**31 - 1


def _graphs(db, peer_id: int) -> int:
    return db.query(
        "SELECT COUNT(*) FROM conversations_taskgraph g JOIN conversations_conversation c ON "
        f"g.conversation_id = c.id WHERE c.peer_id = {peer_id}"
    )[0][0]


def _mirrored(db, text: str) -> bool:
    return bool(db.query(f"SELECT 1 FROM conversations_message WHERE text = '{text}'"))


def test_a_muted_group_a_marked_dialog_and_a_lost_message_get_the_attention_the_original_pays(telegram):
    env, db, llm, standin, agent, bob, tmp = telegram
    env |= {"CINDY_UNREAD_SCAN_SECONDS": "2", "CINDY_READ_DELAY_SECONDS": "0"}
    group = standin.run(standin.world.create_group, title="Allotment", member_ids=[agent.id, bob.id])
    gkey, dm = ("chat", group.id), standin.world.dm_key(agent.id, bob.id)

    def mute() -> None:
        standin.world.users[agent.id].muted_until[gkey] = MUTED_FOR_EVER

    standin.run(mute)
    standin.run(standin.world.send, bob.id, gkey, "morning all")
    llm.set_default_reply(plan("under the rhubarb"))
    process, log = logged_in_gateway(env, tmp)
    try:
        wait_for(lambda: _mirrored(db, "morning all"), "the group in the mirror", log)
        assert db.query(f"SELECT muted FROM conversations_conversation WHERE peer_id = {-group.id}") == [(1,)]

        standin.run(standin.world.send, bob.id, gkey, "anyone got twine?")
        wait_for(lambda: _mirrored(db, "anyone got twine?"), "the plain message in the mirror", log)
        assert _graphs(db, -group.id) == 0  # muted, and no callout: recorded only

        standin.run(standin.world.send, bob.id, gkey, "@tess have you got twine?")
        wait_for(
            lambda: texts_from(standin, gkey, agent.id) == ["under the rhubarb"], "the mention answered", log
        )

        llm.set_default_reply(plan("hello Bob"))
        standin.run(standin.world.send, bob.id, dm, "hi Tess")
        wait_for(lambda: texts_from(standin, dm, agent.id) == ["hello Bob"], "the DM answered", log)

        llm.set_default_reply(plan("sorry, I missed that"))
        standin.run(standin.world.mark_unread, agent.id, dm)
        wait_for(
            lambda: texts_from(standin, dm, agent.id) == ["hello Bob", "sorry, I missed that"],
            "the marked-unread dialog answered",
            log,
        )
        wait_for(lambda: not standin.world.users[agent.id].unread_mark.get(dm), "the mark cleared", log)

        llm.set_default_reply(plan("yes, it came"))
        standin.run(standin.world.send, bob.id, dm, "did my letter come?", skip_push=agent.id)
        wait_for(
            lambda: texts_from(standin, dm, agent.id)[-1:] == ["yes, it came"],
            "the lost message answered",
            log,
        )
        # The lost update comes after all (an edit's pts gap makes Telethon fetch the difference).
        lost = standin.run(lambda: standin.world.history(dm)[-2])
        standin.run(standin.world.edit, bob.id, dm, lost.id, "did my letter come? (edited)")
        wait_for(lambda: _mirrored(db, "did my letter come? (edited)"), "the late update and the edit", log)
        llm.set_default_reply(plan("you're welcome"))
        standin.run(standin.world.send, bob.id, dm, "thanks!")
        wait_for(lambda: texts_from(standin, dm, agent.id)[-1:] == ["you're welcome"], "the next answer", log)
        # One LLM call each: the group mention, the DM, the mark, the lost message, the thanks.
        assert len(llm.requests) == 5
        assert texts_from(standin, dm, agent.id) == [
            "hello Bob",
            "sorry, I missed that",
            "yes, it came",
            "you're welcome",
        ]
        assert texts_from(standin, gkey, agent.id) == ["under the rhubarb"]
    finally:
        stop(process)
