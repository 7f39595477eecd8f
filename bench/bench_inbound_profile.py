"""What one inbound sandbox DM message costs, counted and profiled, in one process.

    .venv/bin/python bench/bench_inbound_profile.py [--tree PATH] [--agents 100] [--messages 20]
        [--top 25] [--dump DIR] [--no-profile] [--sql]
    .venv/bin/python bench/bench_inbound_profile.py --compare BEFORE_DIR AFTER_DIR [--top 30]

The first form runs the engine of one tree (this checkout, or `--tree`: another checkout, such as
`git worktree add --detach /tmp/old fdbe3ba` with this `.venv` linked into it; this file is copied into
its `bench/`) in-process, as the tests drive it (`engine/tests/harness.py`: the gateway's steps one by
one, the planning task run where a worker would run it, an injected clock, the fake LLM server), on its
test database (SQLite unless DATABASE_URL names a server), each round of it the steps of the gateway's
follow-up pass (ingest, media, tick, presence) and then the queued planning. `--agents` sandbox agents are started; each
chat the messages go to gets a warm-up turn first; then `--messages` messages ("message N") are said to
the agents in the order `bench_scale.py` uses, each settled (reply sent, graph done) before the next.

It prints, per message: the SQL statements (all, and those the ORM built and compiled), split into the
gateway's steps (ingest, tick, sends) and the worker's turn, with the worker's up to the planning
request reaching the LLM; the CPU of the thread that ran them (`time.thread_time`: the fake server's
own thread is left out), split the same way; and cProfile's top functions of each side, by own time
and by cumulative time, with their calls per message. CPU seconds move with the machine's load; the
statement and call counts do not, so compare trees by those first. `--dump DIR` writes the two
profiles (`gateway.pstats`, `worker.pstats`) and the counts (`counts.json`); `--compare` reads two such
directories and prints, per side, the functions whose own time or calls per message differ most, with
the file names made relative to their tree (or to site-packages), so the same function matches in both.
`--sql` lists the statements of the last message, each with its side. `--no-profile` measures the counts and the CPU without cProfile, whose own cost per call is a large
part of the CPU it reports.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV_PREFIX = "CINDY_BENCH_INBOUND_"
SIDES = ("gateway", "worker")


# --- the measured run (collected by pytest inside the tree measured) -----------------------------


def test_inbound_profile(db, settings, fake_llm, clock) -> None:  # pragma: no cover - a bench
    import datetime as dt

    from django.db import connection
    from django.db.models.sql import compiler

    from agents.models import Agent
    from cindy_site.testing.fake_llm import FakeReply
    from engine.tests.cast import make_agent
    from engine.tests.harness import Harness

    try:
        from sandbox.services.chats import sandbox_say
    except ImportError:  # trees before the sandbox app
        from conversations.services.sandbox import sandbox_say

    agents_count = int(os.environ.get(ENV_PREFIX + "AGENTS", "100"))
    messages = int(os.environ.get(ENV_PREFIX + "MESSAGES", "20"))
    top = int(os.environ.get(ENV_PREFIX + "TOP", "25"))
    dump = os.environ.get(ENV_PREFIX + "DUMP", "")
    profiling = os.environ.get(ENV_PREFIX + "PROFILE", "1") == "1"
    listing = os.environ.get(ENV_PREFIX + "SQL", "") == "1"

    for i in range(agents_count):
        make_agent(f"Scale{i:03d}", phone=f"+1555{i:07d}")
    Agent.objects.update(start_typing_delay=1, typing_speed=1000)
    agents = list(Agent.objects.order_by("pk"))

    main_thread = threading.current_thread()
    cpu_clock = time.pthread_getcpuclockid(main_thread.ident)
    counts = {"statements": 0, "orm": 0}
    at_request: list[tuple[float, int, int]] = []

    def responder(_request):
        at_request.append((time.clock_gettime(cpu_clock), counts["statements"], counts["orm"]))
        if listing and len(at_request) == 1:
            listed.append("-------- the planning request reaches the LLM --------")
        return FakeReply(text=json.dumps([{"kind": "send", "text": "hi!"}]))

    fake_llm.set_responder(responder)

    # Statements: every one the connection executes; ORM-compiled: the outermost compiler runs.
    def counting(execute):
        def run(self, *args, **kwargs):
            counts["orm"] += 1
            return execute(self, *args, **kwargs)

        return run

    listed: list[str] = []
    current = ["setup"]

    def statement(execute, sql, params, many, context):
        counts["statements"] += 1
        if listing:
            listed.append(f"{current[0]:<8} {' '.join(sql.split())[:160]}")
        return execute(sql, params, many, context)

    patched = [
        (cls, cls.execute_sql)
        for cls in (
            compiler.SQLCompiler,
            compiler.SQLInsertCompiler,
            compiler.SQLUpdateCompiler,
            compiler.SQLDeleteCompiler,
        )
        if "execute_sql" in cls.__dict__
    ]
    for cls, execute in patched:
        cls.execute_sql = counting(execute)

    harness = Harness(clock)
    profiles = {side: cProfile.Profile(time.thread_time) for side in SIDES}
    spent = {side: {"cpu": 0.0, "statements": 0, "orm": 0} for side in SIDES}
    measuring = [False]

    def phase(side, run):
        if not measuring[0]:
            return run()
        cpu, statements, orm = time.thread_time(), counts["statements"], counts["orm"]
        current[0] = side
        if profiling:
            profiles[side].enable()
        try:
            return run()
        finally:
            if profiling:
                profiles[side].disable()
            current[0] = "bench"
            spent[side]["cpu"] += time.thread_time() - cpu
            spent[side]["statements"] += counts["statements"] - statements
            spent[side]["orm"] += counts["orm"] - orm

    from asgiref.sync import async_to_sync

    def gateway_step(name):
        """A step of the gateway's follow-up pass that the harness has no method for (media, presence)."""
        steps = getattr(harness.gateway, "steps", None)
        run = steps[name].run if isinstance(steps, dict) else getattr(harness.gateway, f"step_{name}")
        return lambda: async_to_sync(run)()

    media, presence = gateway_step("media"), gateway_step("presence")

    def settle(until) -> None:
        # The steps of the gateway's follow-up pass (engine/gateway.py), then the queued planning.
        for _ in range(200):
            did = phase("gateway", harness.ingest)
            did = phase("gateway", media) or did
            did = phase("gateway", harness.tick) or did
            did = phase("gateway", presence) or did
            did = phase("worker", harness.work) or did
            if did:
                continue
            due = harness.next_due()
            if due is None or due > until:
                return
            clock.set(due)
        raise AssertionError("the engine did not settle in 200 rounds")

    def say(agent, text) -> None:
        sandbox_say(agent=agent, text=text)
        settle(clock.now() + dt.timedelta(minutes=5))

    chosen = [agents[(i * 37) % len(agents)] for i in range(messages)]
    with connection.execute_wrapper(statement):
        harness.start()
        for agent in dict.fromkeys(chosen):
            say(agent, "warm-up")
        clock.advance(60)
        settle(clock.now())
        measuring[0] = True
        to_request = {"cpu": 0.0, "statements": 0, "orm": 0}
        for i, agent in enumerate(chosen):
            del at_request[:]
            del listed[:]
            before = (time.clock_gettime(cpu_clock), counts["statements"], counts["orm"])
            gateway_before = dict(spent["gateway"])
            say(agent, f"message {i}")
            assert at_request, f"message {i} to {agent.name} reached no planning request"
            to_request["cpu"] += at_request[0][0] - before[0]
            to_request["statements"] += at_request[0][1] - before[1]
            to_request["orm"] += at_request[0][2] - before[2]
            assert spent["gateway"]["statements"] > gateway_before["statements"]
    for cls, execute in patched:
        cls.execute_sql = execute

    result = {
        "tree": str(Path(settings.BASE_DIR).resolve()),
        "agents": agents_count,
        "messages": messages,
        "per_message": {
            side: {key: value / messages for key, value in spent[side].items()} for side in SIDES
        },
        "to_request": {key: value / messages for key, value in to_request.items()},
    }
    if listing:
        print(f"\nthe statements of the last message ({len(listed)}), in order:")
        print("\n".join(listed))
    report(result, {side: pstats.Stats(profiles[side]) for side in SIDES} if profiling else {}, top)
    if dump:
        folder = Path(dump)
        folder.mkdir(parents=True, exist_ok=True)
        for side in SIDES if profiling else ():
            profiles[side].dump_stats(folder / f"{side}.pstats")
        (folder / "counts.json").write_text(json.dumps(result, indent=2))


def report(result: dict, stats: dict[str, pstats.Stats], top: int) -> None:
    messages = result["messages"]
    per = result["per_message"]
    print(f"\n{result['tree']}: {result['agents']} sandbox agents, {messages} DM messages measured")
    print("per message          statements  ORM-compiled  CPU ms (this thread)")
    for side in SIDES:
        p = per[side]
        print(f"  {side:<18} {p['statements']:>10.1f}  {p['orm']:>12.1f}  {p['cpu'] * 1000:>8.2f}")
    whole = {k: sum(per[s][k] for s in SIDES) for k in ("statements", "orm", "cpu")}
    print(f"  {'both':<18} {whole['statements']:>10.1f}  {whole['orm']:>12.1f}  {whole['cpu'] * 1000:>8.2f}")
    r = result["to_request"]
    print(
        f"  {'to the request':<18} {r['statements']:>10.1f}  {r['orm']:>12.1f}  {r['cpu'] * 1000:>8.2f}"
        "  (said -> the planning request reaching the LLM)"
    )
    for side in stats:
        for order in ("tottime", "cumulative"):
            print(f"\n{side}: top {top} by {order} (ms and calls per message)")
            rows = _rows(stats[side], messages)
            rows.sort(key=lambda row: row[order], reverse=True)
            for row in rows[:top]:
                print(
                    f"  {row['tottime']:8.3f} own {row['cumulative']:8.3f} cum {row['calls']:9.1f} calls  "
                    f"{row['name']}"
                )


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    for root in (str(ROOT), "/tmp/"):
        if filename.startswith(root):
            rest = filename[len(root) :].lstrip("/")
            return rest.split("/", 1)[1] if root == "/tmp/" and "/" in rest else rest
    return filename


def _rows(stats: pstats.Stats, messages: int) -> list[dict]:
    rows: dict[str, dict] = {}
    for (filename, _line, name), (_, calls, own, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        # Without the line number (it moves between trees) and a built-in's address.
        key = f"{_short(filename)}({name})" if filename != "~" else re.sub(r" at 0x[0-9a-f]+", "", name)
        row = rows.setdefault(key, {"name": key, "calls": 0.0, "tottime": 0.0, "cumulative": 0.0})
        row["calls"] += calls / messages
        row["tottime"] += own * 1000 / messages
        row["cumulative"] += cumulative * 1000 / messages
    return list(rows.values())


# --- the command ----------------------------------------------------------------------------------


def compare(before: Path, after: Path, top: int) -> None:
    counts = [json.loads((folder / "counts.json").read_text()) for folder in (before, after)]
    for side in SIDES:
        old, new = (c["per_message"][side] for c in counts)
        print(
            f"{side}: statements {old['statements']:.1f} -> {new['statements']:.1f}, ORM-compiled "
            f"{old['orm']:.1f} -> {new['orm']:.1f}, CPU {old['cpu'] * 1000:.2f} -> {new['cpu'] * 1000:.2f} ms"
        )
    old, new = (c["to_request"] for c in counts)
    print(
        f"to the request: statements {old['statements']:.1f} -> {new['statements']:.1f}, CPU "
        f"{old['cpu'] * 1000:.2f} -> {new['cpu'] * 1000:.2f} ms"
    )
    for side in SIDES:
        tables = []
        for folder, c in zip((before, after), counts, strict=True):
            rows = _rows(pstats.Stats(str(folder / f"{side}.pstats")), c["messages"])
            tables.append({row["name"]: row for row in rows})
        names = set(tables[0]) | set(tables[1])
        empty = {"calls": 0.0, "tottime": 0.0, "cumulative": 0.0}
        diffs = [(name, tables[0].get(name, empty), tables[1].get(name, empty)) for name in names]
        for key, label in (("tottime", "own ms"), ("cumulative", "cumulative ms"), ("calls", "calls")):
            print(f"\n{side}: largest differences in {label} per message (before -> after)")
            diffs.sort(key=lambda d: abs(d[2][key] - d[1][key]), reverse=True)
            for name, a, b in diffs[:top]:
                print(f"  {a[key]:9.3f} -> {b[key]:9.3f}  ({b[key] - a[key]:+9.3f})  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--dump", type=Path)
    parser.add_argument("--sql", action="store_true", help="list the last message's statements")
    parser.add_argument(
        "--no-profile",
        action="store_true",
        help="counts and CPU only (cProfile adds its own CPU to every call)",
    )
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare, args.top)
        return
    tree = args.tree.resolve()
    target = tree / "bench" / Path(__file__).name
    if target.resolve() != Path(__file__).resolve():
        shutil.copyfile(__file__, target)
    env = dict(os.environ)
    env.update(
        {
            ENV_PREFIX + "AGENTS": str(args.agents),
            ENV_PREFIX + "MESSAGES": str(args.messages),
            ENV_PREFIX + "TOP": str(args.top),
            ENV_PREFIX + "DUMP": str(args.dump.resolve()) if args.dump else "",
            ENV_PREFIX + "PROFILE": "0" if args.no_profile else "1",
            ENV_PREFIX + "SQL": "1" if args.sql else "",
            "CINDY_TEST_TIMEOUT": "0",
        }
    )
    command = [sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-s", "--no-header", str(target)]
    sys.exit(subprocess.run(command, cwd=tree, env=env, check=False).returncode)


if __name__ == "__main__":
    main()
