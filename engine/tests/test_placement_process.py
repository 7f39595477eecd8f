"""Real `runagents --auto` gateways on one machine, sharing MariaDB and Redis with a worker pool.

One run walks the fleet's life: gateways joining one by one spread 30 agents evenly; a wake-up for
an agent reaches only its holder's channel; `manage.py drain` hands a gateway's agents to the others
within seconds while messages arrive; a SIGKILLed gateway's agents are re-placed within the lease; a
SIGTERMed one drains and exits 0. Each round of messages is answered exactly once. Skipped, saying
why, when MariaDB or Redis does not answer.
"""

from __future__ import annotations

import signal
import threading
import time

import pytest

from engine.tests.fleet import REDIS_URL, Fleet, mariadb_or_skip, mariadb_template, redis_or_skip

# Its fleet is on MariaDB whatever the suite runs on: the MariaDB run, where the fleet copies the
# run's migrated database, covers it (on the SQLite run it would migrate a MariaDB database of its own).
pytestmark = [pytest.mark.slow, pytest.mark.mariadb_run]

AGENTS = 30
LEASE_SECONDS = 6


@pytest.fixture
def fleet(request, tmp_path, monkeypatch):
    template = mariadb_template(request)  # before mariadb_or_skip points DATABASE_URL at MariaDB
    mariadb_or_skip(monkeypatch)
    redis_or_skip()
    fleet = Fleet(
        tmp_path, agents=AGENTS, lease_seconds=LEASE_SECONDS, suffix="_placement", template=template
    )
    try:
        yield fleet
    finally:
        fleet.stop_all()


def round_of_messages(fleet: Fleet, label: str, *, deadline: float = 120) -> None:
    for name in fleet.names:
        fleet.say(name, f"{label} to {name}")
    fleet.wait(lambda: fleet.unanswered() == 0, f"every {label} message answered", deadline)
    fleet.assert_exactly_once()


def test_auto_gateways_spread_drain_take_over_and_wake_only_the_holder(fleet):
    fleet.start("workers", "runworkers")
    fleet.gateway("gw-a")
    fleet.wait(lambda: fleet.holdings() == {"gw-a": AGENTS}, "gw-a to hold every agent", 60)

    fleet.gateway("gw-b")
    fleet.wait(lambda: fleet.holdings() == {"gw-a": 15, "gw-b": 15}, "an even spread over two", 60)
    fleet.gateway("gw-c")
    fleet.wait(
        lambda: fleet.holdings() == {"gw-a": 10, "gw-b": 10, "gw-c": 10}, "an even spread over three", 60
    )
    round_of_messages(fleet, "first")

    # A wake-up for an agent goes to the channel of the gateway holding it, and to no other.
    import redis

    holders = fleet.holders()
    agent = next(name for name, holder in holders.items() if holder == "gw-a")
    ids = {name: fleet.gateway_id(name) for name in ("gw-a", "gw-b", "gw-c")}
    seen: list[str] = []
    client = redis.Redis.from_url(REDIS_URL)
    pubsub = client.pubsub()
    pubsub.psubscribe(f"cindy:wake:{fleet.db.name}*")
    pubsub.get_message(timeout=1)  # the subscription's confirmation
    stop = threading.Event()

    def listen() -> None:
        while not stop.is_set():
            message = pubsub.get_message(timeout=0.2)
            if message and message["type"] == "pmessage":
                seen.append(message["channel"].decode())

    listener = threading.Thread(target=listen)
    listener.start()
    try:
        fleet.say(agent, f"wake only the holder of {agent}")
        fleet.wait(lambda: fleet.unanswered() == 0, "the message to gw-a's agent answered", 60)
    finally:
        stop.set()
        listener.join()
        pubsub.close()
    channel = f"cindy:wake:{fleet.db.name}:gateway:"
    assert channel + ids["gw-a"] in seen, seen
    assert channel + ids["gw-b"] not in seen and channel + ids["gw-c"] not in seen, seen
    assert f"cindy:wake:{fleet.db.name}" not in seen, seen  # not every gateway: the holder alone
    fleet.assert_exactly_once()

    # Draining gw-c while messages arrive: its agents move within seconds, nothing lost or doubled.
    for name in fleet.names:
        fleet.say(name, f"during the drain to {name}")
    fleet.start("drain", "drain", ids["gw-c"], "--wait", "20")
    assert fleet.processes["drain"].wait(30) == 0, fleet.log("drain").read_text()
    fleet.wait(lambda: fleet.holdings() == {"gw-a": 15, "gw-b": 15}, "gw-c's agents re-placed", 20)
    # From the drain request (the command's own start up is no part of it) to the last agent held
    # again: sooner than gw-c's leases would have run out had it simply stopped.
    ((drained,),) = fleet.db.query(
        "SELECT TIMESTAMPDIFF(MICROSECOND, drain_requested_at, UTC_TIMESTAMP(6)) / 1e6 "
        f"FROM engine_processheartbeat WHERE name = '{ids['gw-c']}'"
    )
    assert float(drained) < LEASE_SECONDS, f"the drain took {float(drained):.1f} s"
    fleet.wait(lambda: fleet.unanswered() == 0, "every message of the drain answered", 120)
    fleet.assert_exactly_once()

    fleet.start("undrain", "drain", "--undo", ids["gw-c"])
    assert fleet.processes["undrain"].wait(30) == 0
    fleet.wait(
        lambda: fleet.holdings() == {"gw-a": 10, "gw-b": 10, "gw-c": 10}, "gw-c taking agents again", 60
    )

    # SIGKILL gw-b: its agents are re-placed on gw-a and gw-c within the lease of their expiry.
    lost = [name for name, holder in fleet.holders().items() if holder == "gw-b"]
    for name in fleet.names:
        fleet.say(name, f"around the kill to {name}")
    fleet.kill("gw-b")
    killed = time.monotonic()
    fleet.wait(
        lambda: fleet.holdings() == {"gw-a": 15, "gw-c": 15}, "gw-b's agents re-placed", 4 * LEASE_SECONDS
    )
    replaced = time.monotonic() - killed
    assert replaced <= 2 * LEASE_SECONDS, f"re-placing gw-b's agents took {replaced:.1f} s"
    assert set(fleet.holders()) >= set(lost)
    fleet.wait(lambda: fleet.unanswered() == 0, "every message around the kill answered", 120)
    fleet.assert_exactly_once()

    # SIGTERM gw-a: it drains and exits 0; gw-c holds everything within seconds.
    fleet.processes["gw-a"].send_signal(signal.SIGTERM)
    assert fleet.processes["gw-a"].wait(30) == 0, fleet.log("gw-a").read_text()[-3000:]
    fleet.wait(lambda: fleet.holdings() == {"gw-c": AGENTS}, "gw-a's agents on gw-c", LEASE_SECONDS)
    round_of_messages(fleet, "last")
