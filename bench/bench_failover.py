"""Failover benchmark: 100 sandbox agents talking while their LLM route is down. Prints figures; asserts
nothing.

A real `runagents` with its task workers holds 100 sandbox agents on one SQLite database. Each agent's
LLM is `gemini` (gemini-3-flash-preview) with `gpt-5-mini` as its `# LLM Fallback`; both go to one
fake LLM server in this process, which answers each turn with `re <token>`, the token of the newest
person message it was shown. People write to the agents at a steady rate (`--rate`, messages a
second in all), each person waiting for the answer to their last message before the next (so every
message is one turn). After a baseline (BASELINE_SECONDS) the primary model answers 503 to every
request for `--outage` seconds (120 by default), then it answers again; the people write on until the
route's breaker has closed, and the run ends once every message has been answered or DRAIN_SECONDS
went by. The breaker's row is read every 0.1 s.

Figures, each beside its goal:
- messages lost (no answer) and answered twice (two answers carrying its token): goal 0;
- the added delay per reply while the route is down: each reply's delay (from the message to the reply
  as both are stored, less the typing time its send node applied) less the baseline's median, the 95th percentile over the
  messages written during the outage: goal ≤ 5 s;
- the failed calls to the primary before its breaker opened (LLMCall rows with an error, created up to
  the opening): goal within a few (CINDY_LLM_BREAKER_FAILURES, 3, plus what was already in flight);
- the seconds from the route's recovery to its breaker closing: goal ≤ 60 s.

Run: .venv/bin/python bench/bench_failover.py [--rounds N] [--outage SECONDS] [--rate PER_SECOND]
[--agents N] (`--help` lists them). Each round runs in its own process on its own temporary database
(the internal `--round` mode); the figures printed are the medians of the rounds (2 by default).
`--outage 20` is a quick run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_engine import reply_typing, setup_django, user_wait_seconds  # noqa: E402
from processes import stop_process  # noqa: E402

AGENTS = 100
PRIMARY_MODEL = "gemini-3-flash-preview"
FALLBACK = "gpt-5-mini"
BASELINE_SECONDS = 20.0
#: After the breaker closed: how long the people keep writing (the route answers again), then the wait
#: for the last answers.
AFTER_SECONDS = 10.0
DRAIN_SECONDS = 60.0
#: The longest the breaker may take to close after the route's recovery before the round gives up on it.
CLOSE_DEADLINE_SECONDS = 150.0
LOST_GOAL = 0
DELAY_GOAL_SECONDS = 5.0
OPENED_GOAL_CALLS = 5
CLOSED_GOAL_SECONDS = 60.0
_TOKEN = re.compile(r"\bm(\d+)-(\d+)\b")


def _reply_for(request) -> object:
    """The fake model's answer: `re <token>` of the newest person message in the prompt (the highest
    sequence number of the chat's tokens)."""
    from cindy_site.testing.fake_llm import FakeReply

    tokens = _TOKEN.findall(json.dumps(request.json))
    if not tokens:
        return FakeReply(text="[]")
    agent, seq = max(((int(a), int(s)) for a, s in tokens), key=lambda t: t[1])
    return FakeReply(text=json.dumps([{"kind": "send", "text": f"re m{agent}-{seq}"}]))


class BreakerWatch(threading.Thread):
    """Reads the primary route's breaker row every 0.1 s: when it opened (its `changed`, read once
    open), and when it closed again after `recovered` was set."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.opened_at = None  # the row's `changed` when first seen open (a datetime)
        self.recovered: float | None = None  # monotonic time the route answered again
        self.closed_after: float | None = None  # seconds from `recovered` to closed
        self.stop = threading.Event()

    def run(self) -> None:
        from django.db import close_old_connections

        from llm.models import RouteBreaker

        while not self.stop.wait(0.1):
            close_old_connections()
            row = RouteBreaker.objects.filter(provider="gemini", model=PRIMARY_MODEL).first()
            if row is None:
                continue
            if self.opened_at is None and row.state != RouteBreaker.State.CLOSED:
                self.opened_at = row.changed
            if self.recovered is not None and self.closed_after is None and row.state == "closed":
                self.closed_after = time.monotonic() - self.recovered


def _agents(count: int) -> list:
    from agents.models import Agent

    Agent.objects.bulk_create(
        Agent(
            name=f"Fail{i:03d}",
            phone="+15550000000",
            instructions=f"You are Fail{i:03d}.",
            transport="sandbox",
            llm="gemini",
            llm_fallback=[FALLBACK],
            start_typing_delay=1,
            typing_speed=1000,
        )
        for i in range(count)
    )
    return list(Agent.objects.order_by("pk"))


def _start(env: dict[str, str], log: Path, count: int) -> subprocess.Popen:
    from agents.models import AgentLease
    from engine.models import ProcessHeartbeat

    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # the gateway, its task pool and the pool's children in one group
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if (
            AgentLease.objects.count() >= count
            and ProcessHeartbeat.objects.filter(kind=ProcessHeartbeat.Kind.WORKERS).exists()
        ):
            return process
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    raise RuntimeError(f"the gateway did not hold every agent; log:\n{log.read_text()[-3000:]}")


class People:
    """The people writing to the agents: one message outstanding per chat, `rate` messages a second in
    all, each message carrying its token `m<agent index>-<sequence>`."""

    def __init__(self, agents: list, rate: float) -> None:
        self.agents = agents
        self.rate = rate
        self.seq = 0
        self.said: dict[str, tuple[int, object, float]] = {}  # token -> (agent index, its date, phase)
        self.answers: dict[str, list[float]] = {}  # token -> each answer's delay, less typing
        self.waiting: set[int] = set()  # agents with a message not yet answered
        self.last_seen = 0  # the newest agent SandboxMessage id read
        self.next_at = time.monotonic()

    def write(self, phase: float) -> None:
        """One message to a random agent that is not waiting, when the rate says it is time."""
        from sandbox.services.chats import sandbox_say

        if time.monotonic() < self.next_at:
            return
        self.next_at += 1 / self.rate
        free = [i for i in range(len(self.agents)) if i not in self.waiting]
        if not free:
            return
        index = random.choice(free)
        self.seq += 1
        token = f"m{index}-{self.seq}"
        said = sandbox_say(agent=self.agents[index], text=f"hello {token}", as_name=f"Person {index}")
        self.said[token] = (index, said.date, phase)
        self.waiting.add(index)

    def read(self) -> None:
        """The agents' new messages: each answer's delay from its message, less the typing time its
        send node applied (no start-typing delay for an agent already online in the chat)."""
        from sandbox.models import SandboxMessage

        rows = SandboxMessage.objects.filter(id__gt=self.last_seen, sender__agent__isnull=False).order_by(
            "id"
        )
        for message in rows.only("id", "message_id", "text", "date", "random_id"):
            self.last_seen = message.id
            match = _TOKEN.search(message.text)
            if match is None or match.group(0) not in self.said:
                continue
            token = match.group(0)
            index, date, _phase = self.said[token]
            typed = reply_typing(self.agents[index], message)
            delay = user_wait_seconds(said_at=date, replied_at=message.date, typing_applied=typed)
            self.answers.setdefault(token, []).append(delay)
            self.waiting.discard(index)

    def outstanding(self) -> int:
        return sum(1 for token in self.said if token not in self.answers)


def one_round(outage: float, rate: float, count: int) -> dict[str, object]:
    """Agents, the fake server and a gateway; the baseline, the outage and the recovery; the figures."""
    from cindy_site.testing.fake_llm import FakeLLMServer
    from llm.models import LLMCall

    server = FakeLLMServer().start()
    server.set_responder(_reply_for)
    agents = _agents(count)
    log = Path(tempfile.mkdtemp()) / "gateway.log"
    env = {
        **os.environ,
        "GEMINI_BASE_URL": server.url,
        "GOOGLE_GEMINI_API_KEY": "bench",
        "OPENAI_BASE_URL": server.url + "/v1",
        "OPENAI_API_KEY": "bench",
        "DEFAULT_AGENT_LLM": "gemini",
        "CINDY_SESSION_KEY": "bench-only",
        "CINDY_READ_DELAY_SECONDS": "0",
        "LOG_LEVEL": "ERROR",
    }
    process = _start(env, log, count)
    people, watch = People(agents, rate), BreakerWatch()
    watch.start()
    try:
        began = time.monotonic()
        down_at = began + BASELINE_SECONDS
        up_at = down_at + outage
        phase = 0  # 0: baseline, 1: outage, 2: after
        went_down = None
        after_until: float | None = None
        while True:
            clock = time.monotonic()
            if phase == 0 and clock >= down_at:
                server.fail_model(PRIMARY_MODEL, 503, times=None)
                went_down = dt.datetime.now(dt.UTC)
                phase = 1
            if phase == 1 and clock >= up_at:
                server.recover_model(PRIMARY_MODEL)
                watch.recovered = time.monotonic()
                phase = 2
            if phase == 2 and after_until is None:
                if watch.closed_after is not None or clock - up_at > CLOSE_DEADLINE_SECONDS:
                    after_until = clock + AFTER_SECONDS
            if after_until is not None and clock >= after_until:
                break
            people.write(phase)
            people.read()
            time.sleep(0.05)
        drain = time.monotonic() + DRAIN_SECONDS
        while people.outstanding() and time.monotonic() < drain:
            people.read()
            time.sleep(0.2)
        time.sleep(2)  # a second answer to a message would come right after the first
        people.read()
    finally:
        watch.stop.set()
        stop_process(process)
        server.stop()
    baseline = [d[0] for t, d in people.answers.items() if people.said[t][2] == 0]
    during = [d[0] for t, d in people.answers.items() if people.said[t][2] == 1]
    base = statistics.median(baseline) if baseline else 0.0
    added = sorted(d - base for d in during)
    failed_before_open = None
    if watch.opened_at is not None:
        failed_before_open = LLMCall.objects.filter(
            provider="gemini", status="error", created__lte=watch.opened_at
        ).count()
    return {
        "messages": len(people.said),
        "during": len(during),
        "lost": people.outstanding(),
        "twice": sum(1 for delays in people.answers.values() if len(delays) > 1),
        "baseline_s": base,
        "p95_added_s": added[max(0, round(0.95 * len(added)) - 1)] if added else None,
        "failed_before_open": failed_before_open,
        "opened_after_s": None
        if watch.opened_at is None or went_down is None
        else (watch.opened_at - went_down).total_seconds(),
        "failed_calls": LLMCall.objects.filter(provider="gemini", status="error").count(),
        "closed_after_s": watch.closed_after,
    }


def _median(rounds: list[dict], key: str) -> float | None:
    values = [r[key] for r in rounds if r[key] is not None]
    return statistics.median(values) if values else None


def _verdict(value: float | None, goal: float) -> str:
    return "n/a" if value is None else ("meets" if value <= goal else "MISSES")


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def report(rounds: list[dict], outage: float, rate: float, agents: int = AGENTS) -> None:
    lost, twice = _median(rounds, "lost"), _median(rounds, "twice")
    delay, opened = _median(rounds, "p95_added_s"), _median(rounds, "failed_before_open")
    closed = _median(rounds, "closed_after_s")
    never_closed = sum(1 for r in rounds if r["closed_after_s"] is None)
    not_closed = f" ({never_closed} round(s) did not close within {CLOSE_DEADLINE_SECONDS:g} s)"
    print(
        f"failover, {agents} sandbox agents, primary {PRIMARY_MODEL} down (503) for {outage:g} s, fallback "
        f"{FALLBACK}, {rate:g} messages/s; medians of {len(rounds)} round(s) "
        f"({', '.join(str(r['messages']) for r in rounds)} messages, "
        f"{', '.join(str(r['during']) for r in rounds)} during the outage):"
    )
    print(f"- messages lost: {lost:g}; goal {LOST_GOAL}, {_verdict(lost, LOST_GOAL)}")
    print(f"- messages answered twice: {twice:g}; goal {LOST_GOAL}, {_verdict(twice, LOST_GOAL)}")
    print(
        f"- p95 added delay per reply during the outage: {_seconds(delay)} (baseline median "
        f"{_seconds(_median(rounds, 'baseline_s'))}); goal ≤ {DELAY_GOAL_SECONDS:g} s, "
        f"{_verdict(delay, DELAY_GOAL_SECONDS)}"
    )
    print(
        "- failed calls to the primary before its breaker opened: "
        f"{'never opened' if opened is None else f'{opened:g}'}, "
        f"{_seconds(_median(rounds, 'opened_after_s'))} after the outage began (all failed calls to it, "
        f"probes included: {_median(rounds, 'failed_calls'):g}); goal ≤ {OPENED_GOAL_CALLS}, "
        f"{_verdict(opened, OPENED_GOAL_CALLS)}"
    )
    print(
        f"- breaker closed after the route recovered: {_seconds(closed)}"
        f"{not_closed if never_closed else ''}; goal ≤ {CLOSED_GOAL_SECONDS:g} s, "
        f"{_verdict(closed, CLOSED_GOAL_SECONDS)}"
    )
    print(
        "Leaves out: a real provider's outage (the fake answers 503 at once; a provider that hangs "
        "costs each call up to LLM_TIMEOUT_SECONDS until the breaker opens), bursts (one message "
        "outstanding per chat), several gateways or worker hosts sharing the breaker, MySQL and Redis "
        "(embedded SQLite), Telegram (sandbox transport), and the fake server's own CPU."
    )


def _positive(kind: type):
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r}: give more than 0")
        return value

    return parse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The bench's options; `--help` prints them and runs nothing."""
    parser = argparse.ArgumentParser(
        prog="bench_failover.py",
        description="Failover benchmark: sandbox agents talking while their LLM route is down (a 503 "
        "outage of the primary model, a fallback answering); prints figures beside their goals.",
        epilog="Each round runs in its own process on its own temporary database; the figures are the "
        "medians of the rounds. A quick run: --outage 20.",
    )
    parser.add_argument(
        "--rounds", type=_positive(int), default=2, metavar="N", help="rounds to run (default: 2)"
    )
    parser.add_argument(
        "--outage",
        "--outage-seconds",
        dest="outage",
        type=_positive(float),
        default=120.0,
        metavar="SECONDS",
        help="how long the primary model answers 503 (default: 120)",
    )
    parser.add_argument(
        "--rate",
        type=_positive(float),
        default=2.0,
        metavar="PER_SECOND",
        help="messages a second, all people together (default: 2)",
    )
    parser.add_argument(
        "--agents",
        type=_positive(int),
        default=AGENTS,
        metavar="N",
        help=f"sandbox agents, one person each (default: {AGENTS}; the goals are stated for {AGENTS})",
    )
    return parser.parse_args(argv)


def round_command(env: dict[str, str], outage: float, rate: float, agents: int) -> list[str]:
    """The command of one round's process (the internal `--round` mode)."""
    return [
        sys.executable,
        str(Path(__file__).resolve()),
        "--round",
        json.dumps(env),
        str(outage),
        str(rate),
        str(agents),
    ]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.rounds):
            env = {
                "SECRET_KEY": "bench-only",
                "CINDY_ENV_FILE": os.devnull,
                "LOG_LEVEL": "ERROR",
                "CINDY_SQLITE_PATH": str(Path(tmp) / f"failover-{number}.sqlite3"),
            }
            done = subprocess.run(
                round_command(env, args.outage, args.rate, args.agents), capture_output=True, text=True
            )
            line = next((x for x in done.stdout.splitlines() if x.startswith("ROUND ")), None)
            if line is None:
                print(f"round {number + 1}: failed\n{done.stderr[-3000:]}", flush=True)
                continue
            results.append(json.loads(line[len("ROUND ") :]))
    if results:
        report(results, args.outage, args.rate, args.agents)


def run_round(args: list[str]) -> None:
    """The internal `--round ENV OUTAGE RATE [AGENTS]` mode: one round in this process, its figures
    printed as one `ROUND {...}` line for `main` to read."""
    child_env, outage_s, rate_s, *rest = args
    for key in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(key, None)
    setup_django(json.loads(child_env))
    count = int(rest[0]) if rest else AGENTS
    print("ROUND " + json.dumps(one_round(float(outage_s), float(rate_s), count)), flush=True)


if __name__ == "__main__":
    if "--round" in sys.argv:
        run_round(sys.argv[sys.argv.index("--round") + 1 :][:4])
    else:
        main()
