"""Drive a Gateway step by step in tests: no event loop of our own, no sleeping.

Planning is not queued on django-q2 here; the harness collects the (node id, claim token) pairs the
gateway would queue and runs `engine.tasks.run_received` on them directly, as a worker would. The
lease heartbeat shares the test's connection (`isolated_heartbeat=False`): a test runs inside one
transaction that other connections cannot see.
"""

from __future__ import annotations

import datetime as dt
import json

from asgiref.sync import async_to_sync
from django.test import TestCase

from cindy_site.clock import FakeClock
from conversations.models import NodeStatus, TaskNode
from engine.gateway import Gateway
from engine.tasks import run_received
from llm.prompt.builder import RECENT_ENTRIES_TITLE


class Harness:
    def __init__(self, clock: FakeClock, *, gateway_id: str = "gw-test", **kwargs) -> None:
        self.clock = clock
        self.queued: list[tuple[int, str]] = []
        kwargs.setdefault("isolated_heartbeat", False)
        self.gateway = Gateway(
            gateway_id=gateway_id,
            enqueue=lambda node_id, owner: self.queued.append((node_id, owner)),
            tick_seconds=0,
            **kwargs,
        )

    def step(self, name: str) -> bool:
        """Run one step of the gateway by name (`Gateway.steps`), or "heartbeat", or "drain"."""
        gateway = self.gateway
        if name in gateway.steps:
            return async_to_sync(gateway.steps[name].run)()
        return async_to_sync({"heartbeat": gateway.heartbeat.run, "drain": gateway.drain}[name])()

    def refresh(self, name: str) -> bool:
        """A refresh step ("dialogs", "library") and the refreshes it started, to their end: whether
        they changed anything."""
        step = self.gateway.steps[name]

        async def run() -> bool:
            did = await step.run()
            return await step.settle() or did

        return async_to_sync(run)()

    def refresh_due(self, kind: str, agent_id: int) -> float:
        """Seconds until the agent's next `kind` refresh ("dialogs", "library") on the injected clock."""
        return self.gateway.steps[kind].refreshes.states[agent_id].due - self.clock.monotonic()

    def start(self) -> None:
        self.step("leases")
        self.step("connect")

    def ingest(self) -> bool:
        return self.step("ingest")

    def tick(self) -> bool:
        # Tests run inside a transaction that never commits: run the on-commit enqueue explicitly.
        with TestCase.captureOnCommitCallbacks(execute=True):
            return self.step("tick")

    def work(self) -> bool:
        ran = bool(self.queued)
        while self.queued:
            run_received(*self.queued.pop(0))
        return ran

    def next_due(self):
        return (
            TaskNode.objects.filter(
                status=NodeStatus.PENDING,
                agent_id__in=list(self.gateway.clients),
                not_before__gt=self.clock.now(),
            )
            .order_by("not_before")
            .values_list("not_before", flat=True)
            .first()
        )

    def settle(self, *, max_rounds: int = 200, until=None) -> int:
        """Run ingest, tick and workers until nothing is left to do, jumping the clock over waits.

        `until` stops the clock from jumping past that time. Returns the rounds used.
        """
        for rounds in range(1, max_rounds + 1):
            did = self.ingest()
            did = self.tick() or did
            did = self.work() or did
            if did:
                continue
            due = self.next_due()
            if due is None or (until is not None and due > until):
                return rounds
            self.clock.set(due)
        raise AssertionError(f"the engine did not settle in {max_rounds} rounds")


def tasks(*items: dict) -> str:
    """A scripted LLM reply: the task list as JSON."""
    return json.dumps(list(items))


def scripted_turn(
    agent, harness: Harness, fake_llm, *items: dict, text: str = "hello", minutes: int = 5
) -> None:
    """A person writes `text`; the LLM answers with `items`; the engine runs for up to `minutes`."""
    from sandbox.services.chats import sandbox_say

    fake_llm.reply_with(tasks(*items))
    sandbox_say(agent=agent, text=text)
    harness.settle(until=harness.clock.now() + dt.timedelta(minutes=minutes))


def stored_entries_text(request) -> str:
    """The stored entries a recorded Gemini request shows: the system instruction, then the entries
    written since the history's first message, which follow the history (llm.prompt.builder)."""
    system = "".join(part["text"] for part in request.json["systemInstruction"]["parts"])
    recent = [
        part["text"]
        for content in request.json["contents"]
        for part in content["parts"]
        if part.get("text", "").startswith(RECENT_ENTRIES_TITLE)
    ]
    return "\n\n".join([system, *recent])
