"""The chaos suite: real processes killed at random points while 20 people write to an agent in bursts.

One seeded run (CINDY_CHAOS_SEED repeats one; the seed is printed and named in every failure) kills
the gateway twice, an idle task worker twice and a busy one once, in a random order and at
random moments, on the database the suite runs on (SQLite, or MariaDB in `./test.sh --mariadb`). On
SQLite the processes share one database file named by CINDY_SQLITE_PATH, as in production, opened in
WAL mode with a busy timeout and IMMEDIATE transactions (checked after the run). It asserts what an
operator relies on:

- every message from a person is answered;
- no reply is sent twice;
- no LLM call is repeated for a turn whose first call finished;
- every LLM call is costed;
- no process of a killed gateway's tree outlives it by more than the lease;
- a wedged worker pool (an idle worker killed) is detected and replaced within 60 s, and the agent's
  activity shows it; a busy worker killed inside its task is respawned alone, the pool runs on;
- events coming due while the gateway is SIGKILLed around their due time and their chat's partner
  writes each reach the LLM and are acted on by exactly one finished turn;
- with the workers run apart from the gateway (`runagents --no-workers` + `runworkers`), a busy
  worker SIGKILLed mid-call delays no message beyond CINDY_PLANNING_STALL_SECONDS + 30 s;
- a reply the SDK cannot read costs one LLM call, and the next turn answers the message.

The waits are bounded polling of the child database: the only way to observe other processes. The
random pauses before a kill choose the moment of the fault; nothing waits on them for a result.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter
from urllib.parse import urlsplit

import pytest

from engine.tests.chaos import (
    ChaosLLM,
    Driver,
    EventAwareLLM,
    children,
    connected_to,
    descendants,
    event_turns,
    pending_chats,
    running,
)
from engine.tests.processes import agent_texts, group_alive, manage, start_gateway, wait_for

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
        chats = self.db.query("SELECT id, peer_id FROM sandbox_sandboxchat")
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
        if busy:
            # Killed inside its task, it usually held no queue lock and that worker alone is respawned
            # (engine/tests/test_task_deaths_process.py pins that); at a random moment it may also
            # have been between its call and its result, where the whole pool is replaced. Either way
            # the message is answered once.
            self.answered(f"answers after busy worker {victim} was killed")
            return
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
    if not db.mysql:  # the production layout's SQLite: one file the processes share, in WAL mode
        assert db.path.is_file() and db.query("PRAGMA journal_mode") == [("wal",)], chaos.fail("not WAL")

    assert pending_chats(db) == [], chaos.fail("unanswered chats")
    assert len(db.query("SELECT id FROM sandbox_sandboxchat")) >= len(PEOPLE)
    texts = agent_texts(db)
    assert texts, chaos.fail("no replies at all")
    twice = [text for text, count in Counter(texts).items() if count > 1]
    assert twice == [], chaos.fail(f"replies sent twice: {twice}")

    calls = db.query("SELECT id, node_id, status, cost FROM llm_llmcall ORDER BY id")
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
    # Each idle worker killed replaces the pool; a busy one killed in its task is respawned alone.
    assert chaos.replacements() >= FAULTS.count("idle worker")


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


EVENTS = 6
EVENT_SPACING_SECONDS = 2.0
EVENT_LEAD_SECONDS = 4.0

#: Runs in a `manage.py shell` child: EVENTS one-off events for Pat's chat, EVENT_SPACING_SECONDS apart.
MAKE_EVENTS = """
import datetime as dt
from agents.models import Agent
from cindy_site.clock import now
from conversations.models import Conversation
from memory.models import ScheduledEvent
agent = Agent.objects.get(name="Wendy")
chat = Conversation.objects.get(agent=agent, title="Pat")
for n in range({events}):
    due = now() + dt.timedelta(seconds={lead} + {spacing} * n)
    ScheduledEvent.objects.create(
        agent=agent, channel_id=chat.peer_id, entry_id=f"event-{{n}}", intent=f"event-{{n}} intent",
        time_raw=due.strftime("%Y-%m-%dT%H:%M:%S"), timezone="UTC", created=now(),
    )
"""


def test_events_due_through_gateway_kills_while_their_partner_writes_are_each_acted_on_once(child):
    """Events come due every 2 s in Pat's chat while Pat writes and the gateway is SIGKILLed just
    before two of the due times: every occurrence reaches the LLM and exactly one finished turn was
    for it (its own trigger, or a trigger it carried), and Pat is answered."""
    env, db, llm, tmp = child
    seed = int(os.environ.get("CINDY_CHAOS_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    env = env | {"CINDY_Q_WORKERS": str(WORKERS), "CINDY_LEASE_SECONDS": str(LEASE_SECONDS)}
    intents = [f"event-{n} intent" for n in range(EVENTS)]
    model = EventAwareLLM(intents)
    llm.set_responder(model)
    log = tmp / "gateway.log"
    driver = Driver(env)
    gateway = start_gateway(env, log)
    what = f"chaos seed {seed}"
    try:
        driver.say("Pat", "hello")
        wait_for(lambda: not pending_chats(db), f"{what}: the first answer", log)
        manage(
            env,
            "shell",
            "-c",
            MAKE_EVENTS.format(events=EVENTS, lead=EVENT_LEAD_SECONDS, spacing=EVENT_SPACING_SECONDS),
        )
        started = time.monotonic()
        kills = sorted(rng.sample(range(EVENTS), 2))
        for n in range(EVENTS):
            due = started + EVENT_LEAD_SECONDS + EVENT_SPACING_SECONDS * n
            time.sleep(max(0.0, due - time.monotonic() - rng.uniform(0.0, 0.3)))
            if n in kills:
                os.killpg(gateway.pid, signal.SIGKILL)
                gateway.wait(timeout=10)
                gateway = start_gateway(env, log)
            driver.say("Pat", f"Pat writes {n}")
        wait_for(
            lambda: not db.query("SELECT id FROM memory_scheduledevent"),
            f"{what}: every event to fire",
            log,
            deadline=ANSWER_SECONDS,
        )
        wait_for(
            lambda: len(event_turns(db)) == EVENTS and not pending_chats(db),
            f"{what}: every event's turn to finish and Pat to be answered",
            log,
            deadline=2 * ANSWER_SECONDS,
        )
    finally:
        driver.close()
        if group_alive(gateway.pid):
            os.killpg(gateway.pid, signal.SIGKILL)

    turns = event_turns(db)
    assert turns == {f"event-{n}": 1 for n in range(EVENTS)}, f"{what}: turns per event {turns}"
    assert all(model.seen[intent] >= 1 for intent in intents), f"{what}: requests per event {model.seen}"
    skipped = db.query("SELECT summary FROM conversations_activityevent WHERE summary LIKE '%did not fire%'")
    assert skipped == [], f"{what}: {skipped}"


def test_busy_workers_killed_in_the_production_layout_delay_no_answer_past_the_stall_limit(child):
    """`runagents --no-workers` and a separate `runworkers`: twice, a worker is SIGKILLed while it waits
    for the LLM; every message is answered within CINDY_PLANNING_STALL_SECONDS + 30 s."""
    env, db, llm, tmp = child
    stall = 20
    env = env | {"CINDY_Q_WORKERS": str(WORKERS), "CINDY_PLANNING_STALL_SECONDS": str(stall)}
    model = ChaosLLM()
    llm.set_responder(model)
    port = urlsplit(llm.url).port
    log = tmp / "gateway.log"
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, tmp / "workers.log", "runworkers")
    driver = Driver(env)
    try:
        for round_ in range(2):
            pool = wait_for(
                lambda: children(workers.pid) if len(children(workers.pid)) == WORKERS + 2 else [],
                "the task worker pool",
                log,
            )
            model.hold()
            for person in PEOPLE[:4]:
                driver.say(person, f"{person} round {round_}")
            wait_for(model.held.is_set, "a planning call to hold", log)
            victim = wait_for(lambda pool=pool: connected_to(pool[:WORKERS], port), "the busy worker", log)[0]
            killed_at = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            model.release()
            try:
                wait_for(
                    lambda: not pending_chats(db),
                    f"every message answered after busy worker {victim} was killed",
                    log,
                    deadline=stall + 30,
                )
            except AssertionError as exc:
                open_nodes = db.query(
                    "SELECT id, status, lease_owner, started FROM conversations_tasknode "
                    "WHERE status NOT IN ('done', 'cancelled')"
                )
                calls = db.query("SELECT id, node_id, status, worker FROM llm_llmcall ORDER BY id")
                workers_log = (tmp / "workers.log").read_text()[-4000:]
                raise AssertionError(
                    f"{exc}\nopen nodes {open_nodes}\ncalls {calls}\nworkers log:\n{workers_log}"
                ) from None
            assert time.monotonic() - killed_at <= stall + 30
        calls = db.query("SELECT status FROM llm_llmcall WHERE status = 'pending'")
        assert calls == [], "LLM calls left pending"
        texts = agent_texts(db)
        assert [t for t, c in Counter(texts).items() if c > 1] == [], "replies sent twice"
    finally:
        model.release()
        driver.close()
        for process in (gateway, workers):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)


def test_malformed_sdk_replies_cost_one_call_and_the_next_turn_answers(child):
    """The real gateway and workers: a reply nested too deeply for the SDK, then one that is not JSON.
    Each costs one LLM call (an `error` row naming why), and the next turn answers the message."""
    env, db, llm, tmp = child
    log = tmp / "gateway.log"
    gateway = start_gateway(env, log)
    driver = Driver(env)
    try:
        for n, body in enumerate(["[" * 100_000 + "]" * 100_000, "<html>a proxy's error page</html>"]):
            before = len(llm.requests)
            llm.raw_next(body)
            driver.say("Pat", f"question {n}")
            wait_for(
                lambda n=n: db.query("SELECT id FROM conversations_taskgraph WHERE status = 'failed'")[n:],
                f"the turn of question {n} to fail",
                log,
            )
            assert len(llm.requests) == before + 1, "the unreadable reply was asked for again"
            llm.reply_with(json.dumps([{"kind": "send", "text": f"answer {n}"}]))
            driver.say("Pat", f"hello again {n}")
            wait_for(lambda: not pending_chats(db), f"the answer after question {n}", log)
            assert f"question {n}" in json.dumps(llm.requests[-1].json)
        rows = db.query("SELECT status, error FROM llm_llmcall WHERE status <> 'ok'")
        assert [status for status, _ in rows] == ["error", "error"]
        assert all("not asked again" in error for _, error in rows)
    finally:
        driver.close()
        if group_alive(gateway.pid):
            os.killpg(gateway.pid, signal.SIGKILL)
