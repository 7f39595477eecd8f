"""`manage.py importchat` as an operator runs it: real processes on a database of their own.

The import, `manage.py recall` and the running gateway are separate processes sharing only the
database, as in production: what the import wrote is found by recall at once, and the agent's next
turn, planned by the gateway's task workers, shows the imported past in its prompt.
"""

from __future__ import annotations

import json
import os
import signal

import pytest

from cwimport.tests.chat_exports import AGENT_ID, message, single_chat, write_export
from engine.tests.processes import agent_texts, manage, plan, start_gateway, wait_for

pytestmark = pytest.mark.slow


def test_an_imported_chat_is_recalled_and_in_the_next_turns_prompt(child):
    env, db, llm, tmp = child
    export = single_chat(
        [
            message(1, name="You", text="Grandmother's quince jelly needs a whole afternoon"),
            message(2, sender=AGENT_ID, name="Wendy", text="Then we make it on Sunday"),
            message(3, name="You", text="Deal!"),
        ],
        name="You",
    )
    path = write_export(tmp / "result.json", export)

    out = manage(env, "importchat", "Wendy", str(path), "--me", str(AGENT_ID))
    assert "Wendy: imported 3, already there 0, skipped: none" in out
    found = manage(env, "recall", "Wendy", "quince")
    assert "message #1" in found and "quince jelly needs a whole afternoon" in found
    assert "imported 0, already there 3" in manage(
        env, "importchat", "Wendy", str(path), "--me", str(AGENT_ID)
    )

    log = tmp / "gateway.log"
    llm.set_default_reply(plan("Sunday it is, I have the jars ready"))
    said = manage(env, "sandbox", "say", "Wendy", "Shall we still do the jelly?")
    assert said.strip() == "sent #4"  # the sandbox numbers on after the imported ids
    process = start_gateway(env, log)
    try:
        wait_for(lambda: agent_texts(db), "the agent's answer", log)
        prompt = json.dumps(llm.requests_to("generate")[0].json, ensure_ascii=False)
        assert "Grandmother's quince jelly needs a whole afternoon" in prompt
        assert "Then we make it on Sunday" in prompt
        rows = db.query("SELECT message_id, is_agent FROM conversations_message ORDER BY message_id")
        assert [(int(i), bool(a)) for i, a in rows[:4]] == [(1, False), (2, True), (3, False), (4, False)]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
