"""1,000 Telegram agents on one gateway: the table of issue 39, measured from outside the product.

A real `runagents` holding CINDY_BENCH_AGENTS (1,000) Telegram agents, each a Telethon client signed in to
the MTProto stand-in (cindy_site/testing/mtproto, in this script's process), with its task pool. The
gateway runs under bench/gateway_probe.py, which times its passes and its event loop's stalls without
changing the product (public APIs only), so a checkout of an earlier commit is measured the same way.
Once every account is connected and SETTLE_SECONDS have passed, the bench measures, in this order:
- idle CPU of the whole tree (every thread of every process, from /proc schedstat) over IDLE_WINDOWS
  consecutive windows of IDLE_SECONDS: the time average of the span beside the goal, the worst window;
- inbound CPU per message of the whole tree, from a person's message in the stand-in to the planning
  request reaching the LLM (less the tree's time-averaged idle CPU over that span, as `bench_scale.py`
  measures 100 agents), in new chats (a person who never wrote to that agent) and in warm chats (one
  who has, with a turn done): the mean over every message beside the goal, the costliest message, the
  mean of each kind; and, with no goal, the tree's CPU over the whole span of those messages up to each
  reply sent and graph done, idle included (a reply waits a second of typing, so idle would be most of
  what is subtracted: a per-message figure less idle would be noise, and could come out negative);
- over that whole measured span (idle and inbound): every gateway pass (wall, awaits included) and every
  stall of the event loop (how late a callback handed to it every 10 ms ran, and every garbage collection
  of the gateway, which holds the loop whether or not a callback was waiting): the worst of each beside
  the goal, and how many were over 50 ms; what the loop thread was running during the stalls, by stack;
  for the slowest passes, the time of each step and outside them; the gateway's database statements
  over 20 ms; what its other threads ran while a pass was over 50 ms;
- the gateway's RSS, read after connecting, after the idle span and at the end: the largest beside the goal.

Run: .venv/bin/python bench/bench_thousand.py [--against REF] [--agents N]
With `--against REF` the same part runs first on a checkout of REF (a git worktree in a temporary
directory, this script and its probe measuring it), then on this tree: each row shows both. Every figure
beside a goal is declared with its statistic and printed through `figures.py`.
Leaves out: the stand-in and the fake LLM server (this script's process; their CPU is not counted).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# bench_scale puts the measured tree's bench/ first (bench_engine's helpers) and reads CINDY_BENCH_ROOT.
from bench_scale import (  # noqa: E402
    ROOT,
    _PerMessage,
    _telegram_world,
    _wait,
    cpu_between,
    telegram_say_and_wait,
    tree_cpu,
)
from figures import Declared, Goal, Statistic, Windows, samples  # noqa: E402
from processes import stop_process  # noqa: E402

AGENTS = 1000
SETTLE_SECONDS = 15.0
#: 12 × 10 s: two minutes of idle (CINDY_BENCH_IDLE_WINDOWS for a shorter trial of the bench itself).
IDLE_WINDOWS = int(os.environ.get("CINDY_BENCH_IDLE_WINDOWS", "12"))
IDLE_SECONDS = 10.0
NEW_CHATS = int(os.environ.get("CINDY_BENCH_CHATS", "8"))
WARM_CHATS = NEW_CHATS
OVER_MS = 50.0
LOGINS = 4
SLOW_SHOWN = 3
BUSY_SHOWN = 8

PASS = Declared("gateway pass, wall", Statistic.WORST, "ms", Goal(50, "≤ 50 ms, every pass", Statistic.WORST))
STALL = Declared("event-loop stall", Statistic.WORST, "ms", Goal(50, "≤ 50 ms, every stall", Statistic.WORST))
INBOUND = Declared(
    "inbound CPU per message, whole tree",
    Statistic.MEAN,
    "ms",
    Goal(20, "≤ 20 ms per message, mean", Statistic.MEAN),
)
INBOUND_WORST = Declared("inbound CPU, the costliest message", Statistic.WORST, "ms")
INBOUND_NEW = Declared("inbound CPU per message, new chats", Statistic.MEAN, "ms")
INBOUND_WARM = Declared("inbound CPU per message, warm chats", Statistic.MEAN, "ms")
IDLE = Declared(
    "idle CPU, whole tree",
    Statistic.TIME_AVERAGE,
    "% of a core",
    Goal(0.02, "≤ 2% of a core, time-averaged", Statistic.TIME_AVERAGE),
)
IDLE_WORST = Declared("idle CPU, worst window", Statistic.WORST, "% of a core")
RSS = Declared("gateway RSS", Statistic.WORST, "MiB", Goal(160, "≤ 160 MiB, every reading", Statistic.WORST))


def _rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024


def _start(env: dict[str, str], count: int, log: Path, out: Path, root: Path) -> subprocess.Popen:
    """`runagents` under the probe, once `count` Telegram accounts are connected (each writes its
    sticker access)."""
    from media_catalog.models import StickerAccess

    StickerAccess.objects.all().delete()
    process = subprocess.Popen(
        [sys.executable, str(HERE / "gateway_probe.py"), str(out), str(root / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        _wait(lambda: StickerAccess.objects.count() >= count, f"{count} connected accounts", log, 1800)
    except BaseException:
        stop_process(process)
        raise
    return process


def _accounts(standin, env: dict[str, str], count: int) -> None:
    """`count` Telegram agents, each a stand-in account signed in with `telegram_login`, LOGINS at a time
    (each login mostly waits on its round trips; one after another, 1,000 took half an hour)."""
    from agents.models import Agent

    for i in range(count):
        phone = f"+999661{i:04d}"  # a test number: its login code is 11111
        standin.run(standin.world.create_user, phone=phone, first_name=f"Tg{i:04d}", username=f"tg{i:04d}")
    Agent.objects.bulk_create(
        Agent(
            name=f"Tg{i:04d}",
            phone=f"+999661{i:04d}",
            instructions="You are a bench agent.",
            transport="telegram",
            llm="gemini",
        )
        for i in range(count)
    )
    names = list(Agent.objects.filter(transport="telegram").order_by("pk").values_list("name", flat=True))
    logins = [
        subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), "telegram_login", *chunk],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for chunk in (names[i::LOGINS] for i in range(LOGINS))
        if chunk
    ]
    failed = []
    for login, chunk in zip(logins, (names[i::LOGINS] for i in range(LOGINS)), strict=False):
        out, err = login.communicate("11111\n" * len(chunk), timeout=3600)
        if login.returncode != 0:
            failed.append(f"{out[-1000:]}\n{err[-2000:]}")
    if failed:
        raise RuntimeError("telegram_login failed:\n" + "\n".join(failed))


def _idle(pid: int) -> Windows:
    reading, at = tree_cpu(pid), time.monotonic()
    windows = []
    for _ in range(IDLE_WINDOWS):
        time.sleep(IDLE_SECONDS)
        after, end = tree_cpu(pid), time.monotonic()
        windows.append((cpu_between(reading, after), end - at))
        reading, at = after, end
    return Windows(tuple(windows))


def _memory_at(record: dict, times: list[float]) -> list[list]:
    """The probe's memory samples (pymalloc blocks in use, its own record's bytes) nearest each time."""
    samples = record.get("memory", [])
    if not samples:
        return []  # a probe from before the samples
    return [min(samples, key=lambda s: abs(s[0] - at))[1:] for at in times]


def _probe_figures(record: dict, begun: float, ended: float) -> dict[str, object]:
    def spanned(end: float, seconds: float) -> bool:  # begun and ended within the measured span
        return begun <= end - seconds and end <= ended

    passes = [seconds * 1000 for end, seconds, _follow in record["passes"] if spanned(end, seconds)]
    stalls = [late * 1000 for at, late in record["stalls"] if begun <= at <= ended]
    stacks = Counter(stack for at, stack in record["stacks"] if begun <= at <= ended).most_common(5)
    steps = {
        name: (len(inside), sum(inside), max(inside))
        for name, times in record.get("steps", {}).items()
        if (inside := [seconds * 1000 for end, seconds in times if spanned(end, seconds)])
    }
    slow = sorted(
        ([seconds * 1000, steps] for end, seconds, steps in record.get("slow", []) if spanned(end, seconds)),
        key=lambda item: -item[0],
    )[:SLOW_SHOWN]
    busy = Counter(
        f"{thread}\n{stack}" for at, thread, stack in record.get("busy", []) if begun <= at <= ended
    ).most_common(BUSY_SHOWN)
    statements = sorted(
        (item for item in record.get("statements", []) if spanned(item[0], item[1])),
        key=lambda item: -item[1],
    )[:BUSY_SHOWN]
    collections = [item for item in record.get("collections", []) if spanned(item[0], item[1])]
    return {
        "collections": collections,
        "statements": statements,
        "slow": slow,
        "busy": busy,
        "passes": len(passes),
        "pass_worst": max(passes, default=0.0),
        "passes_over": sum(p > OVER_MS for p in passes),
        "pass_median": statistics.median(passes) if passes else 0.0,
        # A collection holds the interpreter: the loop cannot run, whether or not a probe was waiting.
        "stall_worst": max(
            [*stalls, *(seconds * 1000 for _end, seconds, _gen, _n in collections)], default=0.0
        ),
        "stalls_over": sum(s > OVER_MS for s in stalls),
        "collections_over": sum(seconds * 1000 > OVER_MS for _end, seconds, _gen, _n in collections),
        "probes": record["probes"],
        "stacks": stacks,
        "steps": sorted(steps.items(), key=lambda item: -item[1][1]),
    }


def part(count: int, roots: list[tuple[str, str]]) -> list[dict[str, object]]:
    """Sign `count` accounts in once, then measure a gateway of each tree in `roots` in turn, on the same
    database and stand-in (the trees share the schema: `--against` a commit with the same migrations)."""
    from agents.models import Agent

    with _telegram_world() as (server, standin, env, log):
        started = time.monotonic()
        _accounts(standin, env, count)
        signed = time.monotonic() - started
        Agent.objects.update(start_typing_delay=1, typing_speed=1000)
        found = []
        for turn, (_label, root) in enumerate(roots):
            found.append({"signed_seconds": signed, **_measure(server, standin, env, log, Path(root), turn)})
        return found


def _measure(server, standin, env: dict[str, str], log: Path, root: Path, turn: int) -> dict[str, object]:
    from agents.models import Agent

    world = standin.world
    agents = list(Agent.objects.filter(transport="telegram", disabled=False).order_by("pk"))
    accounts = {a.pk: world.user_by_phone(a.phone).id for a in agents}
    people = [
        standin.run(world.create_user, phone=f"+9996{turn}{9000 + i:05d}", first_name=f"Pat{turn}{i}").id
        for i in range(NEW_CHATS + 1)
    ]
    out = Path(tempfile.mkdtemp()) / "probe.json"
    started = time.monotonic()
    process = _start(env, len(agents), log, out, root)
    connected = time.monotonic() - started
    per = _PerMessage(process.pid)

    def say_and_wait(agent, person: int, text: str) -> None:
        telegram_say_and_wait(standin, accounts[agent.pk], agent, person, text, log)

    try:
        rss, rss_at = [_rss_mib(process.pid)], [time.monotonic()]
        time.sleep(SETTLE_SECONDS)
        warm = [agents[(i * 37) % len(agents)] for i in range(WARM_CHATS)]
        server.set_responder(per)
        for agent in warm:  # each warm chat exists and has had a turn
            say_and_wait(agent, people[-1], "warm-up")
        begun = time.monotonic()
        idle = _idle(process.pid)
        rss.append(_rss_mib(process.pid))
        rss_at.append(time.monotonic())
        per.idle_rate = idle.time_average
        fresh = [agents[(i * 53 + 11 + turn * 7) % len(agents)] for i in range(NEW_CHATS)]
        reply_from = tree_cpu(process.pid), time.monotonic()
        new_cpu = [
            per.measure(lambda a=agent, i=i: say_and_wait(a, people[i], f"hello {i}"))[0]
            for i, agent in enumerate(fresh)
        ]
        warm_cpu = [
            per.measure(lambda a=agent, i=i: say_and_wait(a, people[-1], f"again {i}"))[0]
            for i, agent in enumerate(warm)
        ]
        reply_cpu = cpu_between(reply_from[0], tree_cpu(process.pid))
        reply_wall = time.monotonic() - reply_from[1]
        rss.append(_rss_mib(process.pid))
        rss_at.append(time.monotonic())
        ended = time.monotonic()
        time.sleep(1.5)  # the probe's file is rewritten every second
    finally:
        server.set_responder(None)
        stop_process(process)
    record = json.loads(out.read_text())
    return {
        "agents": len(agents),
        "connect_seconds": connected,
        "idle": idle.windows,
        "new": [v * 1000 for v in new_cpu],
        "warm": [v * 1000 for v in warm_cpu],
        "replies": [reply_cpu * 1000, reply_wall, len(new_cpu) + len(warm_cpu)],
        "rss": rss,
        "span_seconds": ended - begun,
        **_probe_figures(record, begun, ended),
        "memory": _memory_at(record, rss_at),
    }


# --- the table ---------------------------------------------------------------------------------------------


def _row(declared: Declared, now: float, before: float | None, extra: str = "") -> str:
    was = f" (before: {declared.figure(before, goal=False).text})" if before is not None else ""
    return f"- {declared.name}: {declared.figure(now).line()}{was}{extra}"


def _replies(now: dict, before: dict | None) -> str:
    """The whole span of the inbound messages, each up to its reply sent and its graph done: the tree's
    CPU over it, idle included (the typing delay of a second per reply makes idle a large share, so
    it is shown as measured, not less an average), and how much of it the idle rate accounts for."""

    def text(d: dict) -> str:
        cpu, wall, count = d["replies"]
        idle = Windows(tuple(map(tuple, d["idle"]))).time_average * wall * 1000
        return (
            f"{cpu / count:.1f} ms per message over {wall:.0f} s ({idle / count:.1f} of it at the idle rate)"
        )

    was = f" (before: {text(before)})" if before and "replies" in before else ""
    return f"- inbound messages up to the reply sent, tree CPU idle included, no goal: {text(now)}{was}"


def table(now: dict, before: dict | None) -> list[str]:
    """Every row of issue 39's table beside its goal, with the before figures of the same run."""

    def b(key: str):
        return before[key] if before else None

    def also(declared: Declared, key: str, values) -> str:
        was = f" (before: {declared.figure(values(before)).text})" if before else ""
        return f"{declared.figure(values(now)).text}{was}"

    idle_now = Windows(tuple(map(tuple, now["idle"])))
    idle_was = Windows(tuple(map(tuple, before["idle"]))) if before else None
    inbound = samples(INBOUND, now["new"] + now["warm"])
    inbound_was = samples(INBOUND, before["new"] + before["warm"]) if before else None
    over = f"{now['passes_over']} of {now['passes']} over {OVER_MS:g} ms" + (
        f" (before: {before['passes_over']} of {before['passes']})" if before else ""
    )
    stalls = (
        f"{now['stalls_over']} stalls over {OVER_MS:g} ms of {now['probes']} probes, and "
        f"{now.get('collections_over', 0)} garbage collections over {OVER_MS:g} ms (each holds the loop)"
    ) + (f" (before: {before['stalls_over']} and {before.get('collections_over', 0)})" if before else "")
    return [
        f"{now['agents']} Telegram agents on the MTProto stand-in, one gateway with its task pool; measured "
        f"over {now['span_seconds']:.0f} s after connecting (sign-in {now['signed_seconds']:.0f} s, connect "
        f"{now['connect_seconds']:.0f} s):",
        _row(
            PASS,
            now["pass_worst"],
            b("pass_worst"),
            f"; {over}; median {now['pass_median']:.1f} ms, not compared",
        ),
        _row(STALL, now["stall_worst"], b("stall_worst"), f"; {stalls}"),
        _row(
            INBOUND,
            statistics.fmean(inbound),
            statistics.fmean(inbound_was) if before else None,
            f"; the costliest message {also(INBOUND_WORST, 'x', lambda d: max(d['new'] + d['warm']))}; "
            f"new chats {also(INBOUND_NEW, 'x', lambda d: statistics.fmean(d['new']))}; "
            f"warm chats {also(INBOUND_WARM, 'x', lambda d: statistics.fmean(d['warm']))}; from the person's message "
            "to the planning request at the LLM, less the idle CPU (as `bench_scale.py` at 100 agents)",
        ),
        _replies(now, before),
        _row(
            IDLE,
            idle_now.time_average,
            idle_was.time_average if idle_was else None,
            f"; {IDLE_WORST.figure(idle_now.worst).text} of {len(idle_now.windows)} × {IDLE_SECONDS:g} s"
            + (f" (before: {IDLE_WORST.figure(idle_was.worst).text})" if idle_was else ""),
        ),
        _row(
            RSS,
            max(now["rss"]),
            max(before["rss"]) if before else None,
            "; after connecting, after the idle span, at the end: "
            + " / ".join(f"{r:.0f}" for r in now["rss"])
            + (" (before: " + " / ".join(f"{r:.0f}" for r in before["rss"]) + ")" if before else "")
            + " MiB"
            + _memory_text(now, before),
        ),
    ]


def _memory_text(now: dict, before: dict | None) -> str:
    """At the same readings, Python's small objects (pymalloc blocks in use) and the probe's own record."""

    def text(result: dict) -> str:
        memory = result.get("memory") or []
        return (
            " / ".join(f"{blocks / 1000:.0f}k" for blocks, _written in memory)
            + " pymalloc blocks, the probe's record "
            + " / ".join(f"{written / 1024:.0f}" for _blocks, written in memory)
            + " KiB"
            if memory
            else "not sampled"
        )

    return f"; at those readings {text(now)}" + (f" (before: {text(before)})" if before else "")


def _run(count: int, env: dict[str, str], roots: list[tuple[str, str]]) -> list[dict] | None:
    result = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--part",
            str(count),
            "--env",
            json.dumps(env),
            "--roots",
            json.dumps(roots),
        ],
        capture_output=True,
        text=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    if not lines:
        print(f"failed:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}", flush=True)
        return None
    return json.loads(lines[-1])


def _stacks(label: str, figures: dict) -> None:
    print(f"the passes' steps, {label}, over the measured span (ms): count, total, worst")
    for name, (count, total, worst) in figures["steps"]:
        print(f"  {name}: {count}, {total:,.0f}, {worst:,.0f}")
    for wall, steps in figures.get("slow", []):
        inside = sum(seconds for _name, seconds in steps) * 1000
        parts = ", ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in steps if seconds >= 0.005)
        print(
            f"a slow pass, {label}: {wall:.0f} ms, of it {wall - inside:.0f} outside the steps; steps over 5 ms: {parts or 'none'}"
        )
    collections = figures.get("collections", [])
    print(
        f"the gateway's garbage collections over 5 ms, {label}: {len(collections)}"
        + "".join(
            f"; {seconds * 1000:.0f} ms (generation {gen})"
            for _end, seconds, gen, _n in sorted(collections, key=lambda c: -c[1])[:SLOW_SHOWN]
        )
    )
    print(f"the gateway's slowest database statements, {label} (over 20 ms):")
    for _end, seconds, thread, sql in figures.get("statements", []):
        print(f"  {seconds * 1000:.0f} ms, {thread}: {sql}")
    print(f"what the other threads ran while a pass was over {OVER_MS:g} ms, {label} (samples every 20 ms):")
    for stack, count in figures.get("busy", []):
        print(f"  {count} samples:\n    " + stack.replace("\n", "\n    "))
    print(
        f"what the loop ran during its stalls, {label}, over the measured span (samples every 20 ms while a probe was overdue):"
    )
    for stack, count in figures["stacks"]:
        print(f"  {count} samples:\n    " + stack.replace("\n", "\n    "))


def main() -> None:
    """Both trees are checkouts in a temporary directory (this one: its HEAD, as committed when the
    bench starts), measured in turn by one process of this script: the accounts sign in once."""
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__)
        return
    known = {"--against", "--agents"}
    unknown = [a for a in args[::2] if a not in known] + [a for a in args[1::2] if a.startswith("-")]
    if unknown or len(args) % 2:
        sys.exit(
            f"bench_thousand.py: cannot read {' '.join(args)!r}: use [--against REF] [--agents N] (--help)"
        )
    against = args[args.index("--against") + 1] if "--against" in args else None
    count = int(args[args.index("--agents") + 1]) if "--agents" in args else AGENTS
    base = {"SECRET_KEY": "bench-only", "CINDY_ENV_FILE": os.devnull, "LOG_LEVEL": "ERROR"}
    from processes import checkout

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        roots = [(f"before: {against}", against)] if against else []
        roots.append(("this tree", "HEAD"))
        trees = [
            (label, str(stack.enter_context(checkout(ROOT, ref, Path(tmp) / f"tree{index}"))))
            for index, (label, ref) in enumerate(roots)
        ]
        found = _run(count, {**base, "CINDY_SQLITE_PATH": f"{tmp}/bench.sqlite3"}, trees)
    if found:
        for (label, _tree), figures in zip(trees, found, strict=True):
            _stacks(label, figures)
        print("\n".join(table(found[-1], found[0] if against else None)))


if __name__ == "__main__":
    if "--part" in sys.argv:
        from bench_engine import setup_django

        options = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        child_env = json.loads(options["--env"])
        for key in ("DATABASE_URL", "REDIS_URL"):
            if key not in child_env:
                os.environ.pop(key, None)
        setup_django(child_env)
        print(json.dumps(part(int(options["--part"]), json.loads(options["--roots"]))))
    else:
        main()
