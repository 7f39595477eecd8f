"""The chaos suite: real processes killed at random points while 20 people write to an agent in bursts.

One seeded run (CINDY_CHAOS_SEED repeats one; the seed is printed and named in every failure) kills
the gateway twice, an idle task worker twice and a busy one once, in a random order and at
random moments, on the database the suite runs on (SQLite, or MariaDB in `./test.sh --mariadb`). It
asserts what an operator relies on:

- every message from a person is answered;
- no reply is sent twice;
- no LLM call is repeated for a turn whose first call finished;
- every LLM call is costed;
- no process of a killed gateway's tree outlives it by more than the lease;
- a wedged worker pool is detected and replaced within 60 s, and the agent's activity shows it.

The waits are bounded polling of the child database: the only way to observe other processes. The
random pauses before a kill choose the moment of the fault; nothing waits on them for a result.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest

from engine.tests.chaos import ChaosLLM, Driver, children, connected_to, descendants, pending_chats, running
from engine.tests.processes import agent_texts, group_alive, start_gateway, wait_for

pytestmark = pytest.mark.slow

PEOPLE = [f"Person {i:02d}" for i in range(20)]
WORKERS = 2
LEASE_SECONDS = 3
WEDGE_LIMIT_SECONDS = 60
ANSWER_SECONDS = 60
FAULTS = ["gateway"] * 2 + ["idle worker"] * 2 + ["busy worker"]
REPLACED = "task workers replaced"


class Chaos:
    def __init__(self, child, seed: int) -> None:
        env, self.db, self.llm, tmp = child
        self.env = env | {"CINDY_Q_WORKERS": str(WORKERS), "CINDY_LEASE_SECONDS": str(LEASE_SECONDS)}
        self.log = tmp / "gateway.log"
        self.seed = seed
        self.rng = random.Random(seed)
        self.model = ChaosLLM()
        self.llm.set_responder(self.model)
        self.port = urlsplit(self.llm.url).port
        self.history: list[str] = []
        self.sent = 0
        self.gateway = start_gateway(self.env, self.log)
        self.driver = Driver(self.env)

    def fail(self, what: str) -> str:
        return f"chaos seed {self.seed} ({' -> '.join(self.history)}): {what}"

    def state(self) -> str:
        """What is still open, for a failure message."""
        nodes = self.db.query(
            "SELECT id, conversation_id, kind, status, attempts, lease_owner, error FROM conversations_tasknode "
            "WHERE status NOT IN ('done', 'cancelled')"
        )
        graphs = self.db.query(
            "SELECT id, conversation_id, status, target_message_id, trigger FROM conversations_taskgraph "
            "ORDER BY id DESC LIMIT 8"
        )
        mirror = self.db.query(
            "SELECT conversation_id, MAX(message_id), COUNT(*) FROM conversations_message WHERE is_agent = 0 "
            "GROUP BY conversation_id"
        )
        convs = self.db.query("SELECT id, peer_id FROM conversations_conversation")
        chats = self.db.query("SELECT id, peer_id FROM conversations_sandboxchat")
        return (
            f"pending chats {pending_chats(self.db)}; open nodes {nodes}; graphs {graphs}; mirror {mirror}; "
            f"conversations {convs}; chats {chats}"
        )

    def burst(self, people: list[str]) -> None:
        for person in people:
            for _ in range(self.rng.randint(1, 3)):
                self.sent += 1
                self.driver.say(person, f"{person} says {self.sent}")

    def random_burst(self) -> None:
        self.burst(self.rng.sample(PEOPLE, self.rng.randint(3, 8)))

    def answered(self, what: str, deadline: float = ANSWER_SECONDS) -> None:
        try:
            wait_for(lambda: not pending_chats(self.db), self.fail(what), self.log, deadline=deadline)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.state()}") from None

    def pool(self) -> list[int]:
        """The live worker pool of the current gateway: its workers first, then monitor and pusher."""

        def ready() -> list[int]:
            runners = children(self.gateway.pid)
            pool = children(runners[0]) if runners else []
            return pool if len(pool) == WORKERS + 2 else []

        return wait_for(ready, self.fail("the task worker pool"), self.log)

    def replacements(self) -> int:
        return self.db.query(
            f"SELECT COUNT(*) FROM conversations_activityevent WHERE summary LIKE '{REPLACED}%'"
        )[0][0]

    # --- faults --------------------------------------------------------------------------------

    def kill_gateway(self) -> None:
        self.random_burst()
        time.sleep(self.rng.uniform(0, 1.5))  # the moment of the fault, somewhere in the burst's work
        tree = descendants(self.gateway.pid)
        self.gateway.kill()
        self.gateway.wait(timeout=10)
        wait_for(
            lambda: not any(running(pid) for pid in tree),
            self.fail(f"the killed gateway's processes {tree} to end within the lease"),
            self.log,
            deadline=LEASE_SECONDS,
        )
        self.gateway = start_gateway(self.env, self.log)

    def kill_worker(self, *, busy: bool) -> None:
        self.answered("quiet before a worker kill")
        pool = self.pool()
        before = self.replacements()
        if busy:
            self.model.hold()
            self.burst([self.rng.choice(PEOPLE)])
            wait_for(self.model.held.is_set, self.fail("a planning call to hold"), self.log)
            victim = wait_for(lambda: connected_to(pool[:WORKERS], self.port), self.fail("busy"), self.log)[0]
        else:
            victim = self.rng.choice(pool[:WORKERS])
        killed_at = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        self.model.release()
        if not busy:
            self.random_burst()
        wait_for(
            lambda: self.replacements() > before,
            self.fail(f"the pool to be replaced after worker {victim} was killed"),
            self.log,
            deadline=WEDGE_LIMIT_SECONDS,
        )
        assert time.monotonic() - killed_at <= WEDGE_LIMIT_SECONDS, self.fail("wedge detection too slow")
        self.answered(f"answers after worker {victim} was killed")

    def run(self) -> None:
        self.burst(PEOPLE)
        faults = list(FAULTS)
        self.rng.shuffle(faults)
        for fault in faults:
            self.history.append(fault)
            if fault == "gateway":
                self.kill_gateway()
            else:
                self.kill_worker(busy=fault == "busy worker")
        self.random_burst()
        self.answered("every message answered at the end")

    def stop(self) -> None:
        self.model.release()
        self.driver.close()
        if group_alive(self.gateway.pid):
            os.killpg(self.gateway.pid, signal.SIGKILL)


def test_chaos_kills_lose_no_message_send_nothing_twice_and_repeat_no_finished_call(child):
    seed = int(os.environ.get("CINDY_CHAOS_SEED") or random.randrange(1 << 30))
    print(f"chaos seed {seed}")
    chaos = Chaos(child, seed)
    try:
        chaos.run()
    finally:
        chaos.stop()
    db = chaos.db

    assert pending_chats(db) == [], chaos.fail("unanswered chats")
    assert len(db.query("SELECT id FROM conversations_sandboxchat")) >= len(PEOPLE)
    texts = agent_texts(db)
    assert texts, chaos.fail("no replies at all")
    twice = [text for text, count in Counter(texts).items() if count > 1]
    assert twice == [], chaos.fail(f"replies sent twice: {twice}")

    calls = db.query("SELECT id, node_id, status, cost FROM conversations_llmcall ORDER BY id")
    finished: set[int] = set()
    repeated = []
    for call_id, node_id, status, _cost in calls:
        if node_id in finished:
            repeated.append((call_id, node_id))
        if status == "ok":
            finished.add(node_id)
    assert repeated == [], chaos.fail(f"LLM calls repeated after a finished call of their turn: {repeated}")
    assert all(cost > 0 for *_, cost in calls), chaos.fail(f"uncosted LLM calls: {calls}")
    assert len(chaos.llm.requests) <= len(calls), chaos.fail("LLM requests without an LLMCall row")
    assert chaos.replacements() >= FAULTS.count("idle worker") + FAULTS.count("busy worker")


def test_a_pool_that_takes_no_task_is_restarted_by_the_gateway_watchdog(child):
    """Every pool process frozen (alive, so the pool's own guard sees nothing wrong): the gateway
    notices planning that no worker starts, restarts its workers, and the message is answered."""
    env, db, llm, tmp = child
    env = env | {"CINDY_PLANNING_STALL_SECONDS": "10"}
    llm.set_responder(ChaosLLM())
    log = tmp / "gateway.log"
    gateway = start_gateway(env, log)
    driver = Driver(env)
    try:
        runner = wait_for(lambda: children(gateway.pid), "the task workers", log)[0]
        pool = wait_for(lambda: children(runner) if len(children(runner)) == 3 else [], "the pool", log)
        for pid in pool:
            os.kill(pid, signal.SIGSTOP)
        frozen_at = time.monotonic()
        driver.say("Pat", "anyone there?")
        wait_for(
            lambda: db.query(
                "SELECT summary FROM conversations_activityevent WHERE summary LIKE 'planning stalled%' "
                "AND summary LIKE '%restarting the task workers'"
            ),
            "the stall to be detected and the workers restarted",
            log,
            deadline=WEDGE_LIMIT_SECONDS,
        )
        assert time.monotonic() - frozen_at <= WEDGE_LIMIT_SECONDS
        wait_for(
            lambda: not all(running(pid) for pid in pool), "the frozen pool to be killed", log, deadline=10
        )
        # On a loaded machine the new workers may need a second, later restart: a longer wait here.
        wait_for(
            lambda: not pending_chats(db), "the answer after the restart", log, deadline=2 * ANSWER_SECONDS
        )
        assert not any(running(pid) for pid in pool)
    finally:
        driver.close()
        if group_alive(gateway.pid):
            os.killpg(gateway.pid, signal.SIGKILL)
