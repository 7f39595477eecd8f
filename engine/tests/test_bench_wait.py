"""The wait `bench/bench_engine.py` reports for a reply subtracts the typing the engine applied, read
from the reply's send node: for an agent already online in the chat that is no start-typing delay,
and the wait is not negative (it was -1 s less a few ms when the bench subtracted the delay anyway).
The harness jumps its clock over every wait, so the reply comes exactly the typing time after the
message and the honest wait is zero."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from engine.handlers.send import typing_seconds
from engine.tests.harness import tasks
from sandbox.models import SandboxMessage
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench_engine():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("bench_engine")
    finally:
        sys.path.remove(str(BENCH))


def _wait(bench_engine, agent, harness, fake_llm, text: str) -> tuple[float, float]:
    """(the bench's wait, the old one) for one message and its reply."""
    fake_llm.reply_with(tasks({"kind": "send", "text": f"re: {text}"}))
    said = sandbox_say(agent=agent, text=text, as_name="Ann")
    harness.settle()
    reply = SandboxMessage.objects.filter(chat_id=said.chat_id, sender__agent=agent).order_by("-id").first()
    applied = bench_engine.reply_typing(agent, reply)
    elapsed = (reply.date - said.date).total_seconds()
    return elapsed - applied, elapsed - typing_seconds(agent, reply.text)


def test_the_wait_for_an_agent_already_online_is_not_negative(
    bench_engine, agent, harness, fake_llm, clock, settings
):
    settings.CINDY_READ_DELAY_SECONDS = 0  # as the bench runs: the wait is the engine's own
    agent.start_typing_delay = 3
    agent.save()
    first, first_old = _wait(bench_engine, agent, harness, fake_llm, "hi")
    assert (first, first_old) == (pytest.approx(0), pytest.approx(0))  # a fresh exchange pays the delay

    clock.advance(30)
    second, second_old = _wait(bench_engine, agent, harness, fake_llm, "how are you?")
    assert second == pytest.approx(0)
    assert second_old == pytest.approx(-3)  # the old subtraction: a delay the online agent never paid
