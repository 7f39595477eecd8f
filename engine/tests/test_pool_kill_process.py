"""Every process of the worker pool SIGKILLed, in the production layout, nine rounds per started tree.

`runagents --no-workers` and `runworkers`: each round SIGKILLs every child of the pool's sentinel
(the workers, the pusher and the monitor) and then writes a new sandbox message (or, "mid-call",
writes it first and kills the pool while its planning call is in flight), which must be answered
within 60 s. On the database broker and on Redis (skipped without a Redis server). Nine rounds so a
pass is not luck: each round kills the pool the sentinel started after the previous round's kill, so
one started tree serves them all (a tree per three rounds cost three process starts and a database
copy more per case, and proved nothing the later rounds do not). The agent replies without the read
delay (CINDY_READ_DELAY_SECONDS=0): the new message reaches the queue while the new pool may still be
starting, the harder moment, and no round waits the 3 s the delay would add. The waits poll the child
database against a deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from engine.tests.chaos import ChaosLLM, Driver, children, pending_chats
from engine.tests.processes import group_alive, start_gateway, wait_for

pytestmark = pytest.mark.slow

WORKERS = 2
ROUNDS = 9
ANSWER_SECONDS = 60


def redis_url() -> str:
    """This test process's Redis database (CINDY_TEST_REDIS_URL: each xdist process has its own, so
    no test in another process shares it), emptied; skips without a server."""
    import redis

    url = os.environ.get("CINDY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    try:
        redis.Redis.from_url(url).flushdb()
    except redis.exceptions.ConnectionError:
        pytest.skip(f"no Redis answers at {url} (./test.sh starts one)")
    return url


@pytest.mark.parametrize(
    ("broker", "moment"), [("database", "idle"), ("database", "mid-call"), ("redis", "idle")]
)
def test_a_pool_whose_every_process_is_killed_answers_the_next_message_within_a_minute(child, broker, moment):
    env, db, llm, tmp = child
    env = env | {"CINDY_Q_WORKERS": str(WORKERS), "CINDY_READ_DELAY_SECONDS": "0"}
    if broker == "redis":
        env["REDIS_URL"] = redis_url()
    model = ChaosLLM()
    llm.set_responder(model)
    log, workers_log = tmp / "gateway.log", tmp / "workers.log"
    gateway = start_gateway(env, log, "runagents", "--no-workers")
    workers = start_gateway(env, workers_log, "runworkers")
    driver = Driver(env)
    took = []
    try:
        driver.say("Person 0", "hello before the kills")
        wait_for(lambda: not pending_chats(db), "the first answer", workers_log, deadline=ANSWER_SECONDS)
        for round_ in range(ROUNDS):
            pool = wait_for(
                lambda: children(workers.pid) if len(children(workers.pid)) == WORKERS + 2 else [],
                f"round {round_}: the task worker pool",
                workers_log,
            )
            if moment == "mid-call":  # the message first, the pool killed inside its planning call
                model.hold()
                driver.say(f"Person {round_ + 1}", f"round {round_}: anyone there?")
                wait_for(model.held.is_set, f"round {round_}: a planning call to hold", workers_log)
            for pid in pool:
                # A process the sentinel itself ended since the look (a pool still being replaced
                # after the previous round) is as dead as the rest.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed_at = time.monotonic()
            model.release()
            if moment == "idle":
                driver.say(f"Person {round_ + 1}", f"round {round_}: anyone there?")
            try:
                wait_for(
                    lambda: not pending_chats(db),
                    f"round {round_}: the answer after the pool {pool} was killed",
                    workers_log,
                    deadline=ANSWER_SECONDS,
                )
            except AssertionError as exc:
                nodes = db.query(
                    "SELECT id, status, lease_owner, started, error FROM conversations_tasknode "
                    "WHERE status NOT IN ('done', 'cancelled')"
                )
                queue = db.query("SELECT id, lock FROM django_q_ormq")
                raise AssertionError(
                    f"{exc}\nopen nodes {nodes}\nqueue {queue}\ngateway log:\n{log.read_text()[-3000:]}"
                ) from None
            took.append(round(time.monotonic() - killed_at, 1))
        print(f"{broker} {moment}: answered {took} s after each kill")
    finally:
        model.release()
        driver.close()
        for process in (gateway, workers):
            if group_alive(process.pid):
                os.killpg(process.pid, signal.SIGKILL)
