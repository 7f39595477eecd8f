"""Soak: does the resident memory of the gateway and its task workers stay flat under steady load?

A real `runagents` (gateway + its `runworkers` pool, django-q2's forked workers) drives 100 sandbox
agents with 10 conversations each (1,000 DMs), while this process, as the people, writes to those
conversations at a steady rate (each conversation gets its next message only once its last one was
answered, so a slow machine lowers the rate instead of piling up a queue). The LLM is the fake LLM
server in a process of its own, answering every turn with one short `send`.

Every `--sample` seconds (60) it prints the VmRSS of the gateway, the `runworkers` process and each
process of the pool (a worker is named by django-q2's "ready for work" line), and the messages
written and answered so far. At the end it compares each process's last sample with its sample at
`--warmup` (5 minutes) and prints whether the growth stays within 5 % (the goal).

Run:   .venv/bin/python bench/bench_soak.py                       (15 minutes)
Quick: .venv/bin/python bench/bench_soak.py --minutes 2 --warmup 0.5 --sample 15

What it leaves out (each can change the memory picture):
- Telethon: the agents are sandbox agents, so no MTProto connections, entity caches or media
  downloads;
- the web process (admin, dashboard sockets, the relay) and Redis: the default layout with SQLite
  (`--mysql` runs it on a dedicated MariaDB database at DATABASE_URL or 127.0.0.1:3306 instead);
- real LLM replies: the fake answers at once with a few bytes, no retrieval, memories, stickers or
  media descriptions, so prompts grow only with each chat's history;
- a process that replaces another (a worker restarted by the pool) is compared from its own first
  sample, which the verdict says;
- anything slower than the run: 15 minutes shows a leak per message or per pass, not one per day.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import mysql_admin  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
AGENTS = 100
CONVERSATIONS_PER_AGENT = 10
GROWTH_GOAL = 0.05
REPLY = "ok"
_READY = re.compile(r"Process-[0-9a-f]+ ready for work at (\d+)")


def _options() -> dict[str, float | bool]:
    args = sys.argv[1:]
    options: dict[str, float | bool] = {"minutes": 15.0, "warmup": 5.0, "sample": 60.0, "rate": 2.0}
    options["mysql"] = "--mysql" in args
    for name in ("minutes", "warmup", "sample", "rate"):
        if f"--{name}" in args:
            options[name] = float(args[args.index(f"--{name}") + 1])
    return options


# --- the fake LLM, in its own process ---------------------------------------------------------------


def serve_llm(url_file: str) -> None:
    """Run the fake LLM server until SIGTERM; write its URL to `url_file`. It keeps no request log."""
    sys.path.insert(0, str(ROOT))
    from cindy_site.testing.fake_llm import FakeLLMServer

    class Counted(list):
        def append(self, item) -> None:  # count nothing, keep nothing: the soak is not about this process
            pass

    server = FakeLLMServer().start()
    server.requests = Counted()
    server.set_default_reply(json.dumps([{"kind": "send", "text": REPLY}]))
    Path(url_file).write_text(server.url)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        time.sleep(0.2)
    server.stop()


# --- process memory -----------------------------------------------------------------------------------


def _rss_mib(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    line = next((line for line in status.splitlines() if line.startswith("VmRSS")), None)
    return int(line.split()[1]) / 1024 if line else None


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def process_names(gateway_pid: int, log: Path) -> dict[int, str]:
    """The gateway and every process below it, named: gateway, runworkers, worker <pid>, pool <pid>."""
    workers = {int(pid) for pid in _READY.findall(log.read_text())}
    tree = _children()
    names = {gateway_pid: "gateway"}
    queue = [(gateway_pid, 0)]
    while queue:
        pid, depth = queue.pop(0)
        for child in sorted(tree.get(pid, [])):
            if depth == 0:
                names[child] = "runworkers"
            else:
                names[child] = f"worker {child}" if child in workers else f"pool {child}"
            queue.append((child, depth + 1))
    return names


# --- the driver ----------------------------------------------------------------------------------------


def setup_django(env: dict[str, str]) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.update(env)
    os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def make_agents() -> list:
    from agents.models import Agent

    Agent.objects.bulk_create(
        Agent(
            name=f"Soak{i:03d}",
            phone="+15550000000",
            instructions=f"You are Soak{i:03d}.",
            transport="sandbox",
            llm="gemini",
            start_typing_delay=1,
            typing_speed=1000,
        )
        for i in range(AGENTS)
    )
    return list(Agent.objects.order_by("pk"))


class People:
    """The 1,000 people: each writes its next message once its last one was answered."""

    def __init__(self, agents: list) -> None:
        self.slots = [(agent, f"Person {j}") for agent in agents for j in range(CONVERSATIONS_PER_AGENT)]
        self.waiting: dict[int, tuple[int, int]] = {}  # slot → (chat id, message id)
        self.next = 0
        self.sent = 0
        self.answered = 0

    def settle(self) -> None:
        from django.db.models import Max

        from sandbox.models import SandboxMessage

        if not self.waiting:
            return
        chats = {chat: slot for slot, (chat, _) in self.waiting.items()}
        latest = (
            SandboxMessage.objects.filter(chat_id__in=list(chats), sender__agent__isnull=False)
            .values("chat_id")
            .annotate(last=Max("message_id"))
        )
        for row in latest:
            slot = chats[row["chat_id"]]
            if row["last"] > self.waiting[slot][1]:
                del self.waiting[slot]
                self.answered += 1

    def write_one(self) -> bool:
        from sandbox.services.chats import sandbox_say

        for _ in range(len(self.slots)):
            slot = self.next
            self.next = (self.next + 1) % len(self.slots)
            if slot in self.waiting:
                continue
            agent, person = self.slots[slot]
            said = sandbox_say(agent=agent, text=f"message {self.sent} from {person}", as_name=person)
            self.waiting[slot] = (said.chat_id, said.message_id)
            self.sent += 1
            return True
        return False


def _line(
    elapsed: float, names: dict[int, str], people: People, samples: dict[int, list[tuple[float, float]]]
):
    parts = []
    for pid, name in names.items():
        mib = _rss_mib(pid)
        if mib is None:
            continue
        samples.setdefault(pid, []).append((elapsed, mib))
        parts.append(f"{name} {mib:.1f}")
    print(
        f"[{elapsed / 60:5.1f} min] RSS MiB: {', '.join(parts)} | written {people.sent}, answered "
        f"{people.answered}, waiting {len(people.waiting)}",
        flush=True,
    )


def verdict(names: dict[int, str], samples: dict[int, list[tuple[float, float]]], warmup: float) -> bool:
    ok = True
    print(f"growth after the first {warmup / 60:g} min (goal ≤ {GROWTH_GOAL:.0%} for each process):")
    for pid, series in samples.items():
        name = names.get(pid, f"process {pid}")
        later = [mib for at, mib in series if at >= warmup]
        if len(later) < 2:
            print(f"  {name}: not compared (it ran {series[-1][0] / 60:.1f} min of the measured part)")
            continue
        growth = (later[-1] - later[0]) / later[0]
        if series[0][0] > warmup:
            name += f" (started at {series[0][0] / 60:.1f} min: a replacement, compared from its start)"
        meets = growth <= GROWTH_GOAL
        ok &= meets
        print(
            f"  {name}: {later[0]:.1f} → {later[-1]:.1f} MiB ({growth:+.1%}, peak {max(later):.1f}); "
            f"{'meets' if meets else 'MISSES'}"
        )
    return ok


def run(options: dict[str, float | bool], env: dict[str, str], tmp: Path) -> None:
    setup_django(env)
    agents = make_agents()
    people = People(agents)
    url_file = tmp / "llm.url"
    llm = subprocess.Popen([sys.executable, __file__, "--serve-llm", str(url_file)])
    log = tmp / "runagents.log"
    gateway = None
    try:
        deadline = time.monotonic() + 30
        while not url_file.exists() or not url_file.read_text():
            if time.monotonic() > deadline:
                raise RuntimeError("the fake LLM server did not start")
            time.sleep(0.05)
        child_env = {
            **os.environ,
            "GEMINI_BASE_URL": url_file.read_text(),
            "GOOGLE_GEMINI_API_KEY": "bench",
            "DEFAULT_AGENT_LLM": "gemini",
            "CINDY_SESSION_KEY": "bench-only",
            "CINDY_READ_DELAY_SECONDS": "0",
            "LOG_LEVEL": "INFO",
        }
        gateway = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "runagents"],
            env=child_env,
            stdout=log.open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        from agents.models import AgentLease

        deadline = time.monotonic() + 180
        while AgentLease.objects.count() < AGENTS or not _READY.search(log.read_text()):
            if time.monotonic() > deadline or gateway.poll() is not None:
                raise RuntimeError(f"the gateway did not take every agent; log:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        duration, warmup, every = options["minutes"] * 60, options["warmup"] * 60, options["sample"]
        interval = 1 / options["rate"]
        print(
            f"soak: {AGENTS} sandbox agents × {CONVERSATIONS_PER_AGENT} conversations, "
            f"{'MariaDB' if options['mysql'] else 'SQLite'}, up to {options['rate']:g} messages/s, "
            f"{duration / 60:g} min, sampled every {every:g} s",
            flush=True,
        )
        start = time.monotonic()
        samples: dict[int, list[tuple[float, float]]] = {}
        names = process_names(gateway.pid, log)
        next_sample, next_write = start, start
        while True:
            now = time.monotonic()
            if now >= next_sample:
                names.update(process_names(gateway.pid, log))
                _line(now - start, names, people, samples)
                next_sample += every
                if now - start >= duration:
                    break
            if gateway.poll() is not None:
                raise RuntimeError(f"the gateway exited; log:\n{log.read_text()[-3000:]}")
            if now >= next_write:
                people.settle()
                people.write_one()
                next_write += interval
            time.sleep(max(0.0, min(next_sample, next_write) - time.monotonic()))
        ok = verdict(names, samples, warmup)
        errors = sum(1 for line in log.read_text().splitlines() if " ERROR " in line or "Traceback" in line)
        print(
            f"soak: {people.sent} messages written, {people.answered} answered; {errors} error line(s) in the "
            f"gateway's log; {'meets' if ok else 'MISSES'} the goal"
        )
    finally:
        if gateway is not None:
            os.killpg(gateway.pid, signal.SIGTERM)
            try:
                gateway.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(gateway.pid, signal.SIGKILL)
                gateway.wait()
        llm.terminate()
        llm.wait(timeout=30)


def main() -> None:
    options = _options()
    base = {"SECRET_KEY": "bench-only", "CINDY_ENV_FILE": os.devnull, "LOG_LEVEL": "ERROR"}
    os.environ.pop("REDIS_URL", None)
    url = os.environ.pop("DATABASE_URL", "") or "mysql://root@127.0.0.1:3306/cindy"
    with tempfile.TemporaryDirectory() as tmp:
        if not options["mysql"]:
            run(options, {**base, "CINDY_SQLITE_PATH": str(Path(tmp) / "soak.sqlite3")}, Path(tmp))
            return
        parts = urlsplit(url)
        name = f"cindy_soak_{os.getpid()}"
        mysql_admin(url, f"CREATE DATABASE {name} CHARACTER SET utf8mb4")
        try:
            run(options, {**base, "DATABASE_URL": f"{parts.scheme}://{parts.netloc}/{name}"}, Path(tmp))
        finally:
            from django.db import connections

            connections.close_all()
            mysql_admin(url, f"DROP DATABASE IF EXISTS {name}")


if __name__ == "__main__":
    if "--serve-llm" in sys.argv:
        serve_llm(sys.argv[sys.argv.index("--serve-llm") + 1])
    else:
        main()
