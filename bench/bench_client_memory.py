"""What one connected Telegram agent costs the gateway in memory, by part. Prints figures; asserts nothing.

The bench's process runs the MTProto stand-in and makes the accounts: each is signed in by a key the
stand-in registers for it (`StandIn.authorize`, no key exchange or login per account), stored in the
agent's database session as `telegram_login` would store it. A fresh process per measurement then does
what the gateway's connect step does for each agent: `transport_for(agent)` in an `AgentClient`,
`connect()` (session from the database, a real Telethon `TelegramClient`, `get_me`) and `reconcile`
(the dialog list and history), all on one event loop, and idles for IDLE_SECONDS. It reports
- the growth of its resident memory (VmRSS) from before the first connection to after the idle span,
  per agent, with nothing else allocating (no tracemalloc);
- in a second process doing the same under tracemalloc, the Python memory still allocated after the
  idle span, per agent, by part: each allocation goes to the part of the first frame of its traceback
  (newest first) that `PARTS` names, so a TL object built by the session lands in "session";
- the asyncio tasks per agent.

With `--gateway`, the same accounts are held by a real `manage.py runagents --no-workers` instead, one
process per count and tree (with `--traced`, another under tracemalloc, its snapshot taken on SIGUSR1:
slow, minutes for 20 agents on two busy cores): its VmRSS
once every account is connected (each writes its sticker access) and IDLE_SECONDS have passed, and per
agent the growth between the smallest count and the others, by part.

Run: .venv/bin/python bench/bench_client_memory.py [N ...] [--gateway [--traced]] [--against REF]
N: agent counts (default 50 200 500). With `--against`, each measurement also runs on a checkout of REF
(`git archive`), in turns with this tree: before and after in one run.
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as dt
import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(os.environ.get("CINDY_BENCH_ROOT") or Path(__file__).resolve().parent.parent)
GATEWAY = "bench-memory:1"
IDLE_SECONDS = 5.0
GATEWAY_TIMEOUT = 900
COUNTS = (50, 200, 500)
TOP_SITES = 12
#: (part, path fragments): the first frame (newest first) whose file contains a fragment names the part.
PARTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("session (DatabaseSession, update state, entity rows)", ("telethon_session.py", "telethon/sessions/")),
    ("Telethon updates (MessageBox, entity cache)", ("telethon/_updates/",)),
    ("Telethon sender and connection (buffers, queues, state)", ("telethon/network/",)),
    ("TelegramClient (its own fields, request plumbing)", ("telethon/client/",)),
    ("our transport (TelethonConnection, its caches)", ("/telegram/",)),
    ("engine per-agent state (AgentClient, reconcile)", ("/engine/",)),
    ("Django model instances and queries", ("/django/", "/agents/", "/conversations/")),
    ("asyncio (tasks, streams, transports)", ("asyncio/",)),
)


def _rss_kib() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])


def _part(traceback) -> str:
    for frame in reversed(traceback):  # tracemalloc keeps the newest frame last with most_recent_first=False
        for name, fragments in PARTS:
            if any(f in frame.filename for f in fragments):
                return name
    return "other"


# --- the measuring process -----------------------------------------------------------------------------


def measure(count: int, traced: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
    import django

    django.setup()
    from asgiref.sync import sync_to_async

    from agents.models import Agent, AgentLease
    from engine.clients import AgentClient
    from engine.ingest import reconcile
    from engine.transports import transport_for

    agents = list(Agent.objects.filter(transport="telegram").order_by("pk")[: count + 1])
    far = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    for agent in agents:
        AgentLease.objects.create(
            agent=agent, holder=GATEWAY, acquired_at=far, heartbeat_at=far, expires_at=far
        )

    async def run() -> tuple[int, int, int, list]:
        tasks_before = before = 0
        clients = []
        for index, agent in enumerate(agents):
            if index == 1:  # the first agent is the warm-up: lazy imports, first-use caches
                gc.collect()
                tasks_before = len(asyncio.all_tasks())
                before = _rss_kib()
                if traced:
                    import tracemalloc

                    tracemalloc.start(25)
            client = AgentClient(agent=agent, transport=transport_for(agent, gateway_id=GATEWAY))
            await client.transport.connect()
            await reconcile(agent_id=agent.pk, transport=client.transport)
            client.connected = True
            clients.append(client)
        await asyncio.sleep(IDLE_SECONDS)
        gc.collect()
        after = _rss_kib()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        trimmed = _rss_kib()
        tasks = len(asyncio.all_tasks()) - tasks_before
        by_part: list = []
        top_sites: list = []
        if traced:
            import tracemalloc

            snapshot = tracemalloc.take_snapshot()
            tracemalloc.stop()
            sums: dict[str, int] = {}
            sites: dict[str, int] = {}
            for stat in snapshot.statistics("traceback"):
                part = _part(stat.traceback)
                sums[part] = sums.get(part, 0) + stat.size
                site = " < ".join(
                    f"{Path(f.filename).name}:{f.lineno}" for f in list(stat.traceback)[::-1][:4]
                )
                sites[site] = sites.get(site, 0) + stat.size
            by_part = sorted(sums.items(), key=lambda kv: -kv[1])
            top_sites = sorted(sites.items(), key=lambda kv: -kv[1])[:TOP_SITES]
        for client in clients:
            await client.transport.disconnect()
        await sync_to_async(AgentLease.objects.filter(holder=GATEWAY).delete)()
        return before, after, trimmed, tasks, by_part, top_sites

    before, after, trimmed, tasks, by_part, top_sites = asyncio.run(run())
    return {
        "count": count,
        "rss_before": before,
        "rss_after": after,
        "rss_trimmed": trimmed,
        "tasks": tasks,
        "parts": by_part,
        "sites": top_sites,
    }


# --- the real gateway ----------------------------------------------------------------------------------

#: Run as `python WRAPPER SNAPSHOT_PATH`: `manage.py runagents --no-workers` with tracemalloc on; SIGUSR1
#: writes a snapshot to SNAPSHOT_PATH.
WRAPPER = """
import os, runpy, signal, sys, tracemalloc
path = sys.argv[1]
tracemalloc.start(int(sys.argv[2]))
def dump(*_):
    tracemalloc.take_snapshot().dump(path + ".part")
    os.replace(path + ".part", path)
signal.signal(signal.SIGUSR1, dump)
sys.argv = ["manage.py", "runagents", "--no-workers"]
sys.path.insert(0, os.getcwd())
runpy.run_path("manage.py", run_name="__main__")
"""


def gateway(count: int, traced: bool, env: dict[str, str], root: Path | None, tmp: Path) -> dict:
    """`runagents --no-workers` holding `count` Telegram agents: its VmRSS (MiB) once they are all
    connected and IDLE_SECONDS have passed, and with `traced`, tracemalloc's sizes by part (bytes)."""
    import signal
    import time

    from processes import stop_process

    from agents.models import Agent
    from media_catalog.models import StickerAccess

    held = list(Agent.objects.filter(transport="telegram").order_by("pk").values_list("pk", flat=True))
    Agent.objects.filter(pk__in=held[:count]).update(disabled=False)
    Agent.objects.filter(pk__in=held[count:]).update(disabled=True)
    StickerAccess.objects.all().delete()
    snapshot_path = tmp / "gateway.snapshot"
    snapshot_path.unlink(missing_ok=True)
    wrapper = tmp / "traced_runagents.py"
    wrapper.write_text(WRAPPER)
    command = (
        [sys.executable, str(wrapper), str(snapshot_path), "12"]
        if traced
        else [sys.executable, "manage.py", "runagents", "--no-workers"]
    )
    with (tmp / "gateway.log").open("a") as log:
        process = subprocess.Popen(
            command,
            env=env,
            cwd=str(root or ROOT),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + GATEWAY_TIMEOUT
        while StickerAccess.objects.count() < count:  # each connected account writes its sticker access
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not connect {count} agents: see {tmp / 'gateway.log'}")
            time.sleep(1)
        time.sleep(IDLE_SECONDS)
        status = Path(f"/proc/{process.pid}/status").read_text()
        rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1])
        parts: dict[str, int] = {}
        if traced:
            process.send_signal(signal.SIGUSR1)
            while not snapshot_path.exists():
                time.sleep(0.5)
            import tracemalloc

            for stat in tracemalloc.Snapshot.load(str(snapshot_path)).statistics("traceback"):
                part = _part(stat.traceback)
                parts[part] = parts.get(part, 0) + stat.size
        return {"count": count, "rss": rss, "parts": parts}
    finally:
        stop_process(process)


# --- the bench's process -------------------------------------------------------------------------------


def _accounts(standin, count: int) -> None:
    """`count` Telegram agents, each signed in to the stand-in with a session in the database."""
    from bench_scale import standin_agent

    from agents.models import Agent, AgentLease

    far = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    for i in range(Agent.objects.filter(transport="telegram").count(), count + 1):  # one warm-up agent
        standin_agent(standin, name=f"Mem{i:04d}", phone=f"+999662{i:04d}", holder=GATEWAY, until=far)
    AgentLease.objects.filter(holder=GATEWAY).delete()  # each measurement takes the leases it needs


def _child(count: int, traced: bool, env: dict[str, str], root: Path | None) -> dict:
    environ = {**env, **({"CINDY_BENCH_ROOT": str(root)} if root else {})}
    script = (
        str((root or ROOT) / "bench" / "bench_client_memory.py") if root else str(Path(__file__).resolve())
    )
    if root and not Path(script).exists():
        script = str(Path(__file__).resolve())  # an earlier checkout without this bench: this script runs it
    done = subprocess.run(
        [sys.executable, script, "--measure", str(count), *(["--traced"] if traced else [])],
        env=environ,
        capture_output=True,
        text=True,
        cwd=str(root or ROOT),
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"measuring {count} agents failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def _report(label: str, rss: dict, traced: dict) -> None:
    count = rss["count"]
    per_agent = (rss["rss_after"] - rss["rss_before"]) / count
    print(
        f"{label}, {count} agents: RSS growth {per_agent:.1f} KiB per agent "
        f"({(rss['rss_after'] - rss['rss_before']) / 1024:.1f} MiB; process {rss['rss_after'] / 1024:.1f} MiB), "
        f"asyncio tasks {rss['tasks'] / count:.1f} per agent; after malloc_trim(0) "
        f"{(rss['rss_trimmed'] - rss['rss_before']) / count:.1f} KiB per agent",
        flush=True,
    )
    total = sum(size for _, size in traced["parts"])
    print(f"  Python allocations still held (tracemalloc): {total / count / 1024:.1f} KiB per agent")
    for part, size in traced["parts"]:
        print(f"    {size / count / 1024:6.1f} KiB  {part}")
    print("  largest allocation sites (newest frame first):")
    for site, size in traced["sites"]:
        print(f"    {size / count / 1024:6.1f} KiB  {site}")


def main() -> None:
    args = sys.argv[1:]
    against = args[args.index("--against") + 1] if "--against" in args else None
    counts = [int(a) for a in args if a.isdigit()] or list(COUNTS)
    sys.path.insert(0, str(ROOT / "bench"))
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "SECRET_KEY": "bench-only",
            "CINDY_ENV_FILE": os.devnull,
            "LOG_LEVEL": "ERROR",
            "CINDY_SQLITE_PATH": str(Path(tmp) / "memory.sqlite3"),
            "CINDY_SESSION_KEY": "bench-only",
            "TELEGRAM_API_ID": "1",
            "TELEGRAM_API_HASH": "standin",
        }
        for key in ("DATABASE_URL", "REDIS_URL"):
            env.pop(key, None)
        from bench_engine import setup_django

        setup_django(env)
        from cindy_site.testing.mtproto import StandIn

        standin = StandIn().start()
        key_path = Path(tmp) / "standin.pub.pem"
        key_path.write_bytes(standin.key.public_pem)
        env.update({"CINDY_TELEGRAM_SERVER": standin.address, "CINDY_TELEGRAM_SERVER_KEY": str(key_path)})
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if against:
            before = Path(tmp) / "before"
            before.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", against], check=True, capture_output=True
            )
            subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
            trees.insert(0, (f"before ({against})", before))
        try:
            if "--gateway" in args:
                _gateway_bench(standin, counts, env, trees, Path(tmp))
                return
            for count in counts:
                _accounts(standin, count)
                for label, root in trees:
                    rss = _child(count, False, env, root)
                    traced = _child(count, True, env, root)
                    _report(label, rss, traced)
        finally:
            standin.stop()


def _gateway_bench(standin, counts: list[int], env: dict[str, str], trees, tmp: Path) -> None:
    """The real gateway at each count (smallest first), each tree in turn: its RSS, and per agent the
    growth from the smallest count, by part."""
    counts = sorted(counts)
    _accounts(standin, counts[-1])
    results: dict[str, list[tuple[dict, dict]]] = {label: [] for label, _ in trees}
    for count in counts:
        for label, root in trees:
            rss = gateway(count, False, env, root, tmp)
            traced = gateway(count, True, env, root, tmp) if "--traced" in sys.argv else {"parts": {}}
            results[label].append((rss, traced))
            print(
                f"{label}: gateway with {count} Telegram agents: VmRSS {rss['rss'] / 1024:.1f} MiB",
                flush=True,
            )
    for label, rows in results.items():
        (low, low_traced), *rest = rows
        for rss, traced in rest:
            agents = rss["count"] - low["count"]
            total = sum(traced["parts"].values()) - sum(low_traced["parts"].values())
            print(
                f"{label}: per agent from {low['count']} to {rss['count']} agents: RSS "
                f"{(rss['rss'] - low['rss']) / agents:.1f} KiB; Python allocations {total / agents / 1024:.1f} KiB:"
            )
            for part in sorted(traced["parts"], key=lambda p: -traced["parts"][p]):
                grown = traced["parts"][part] - low_traced["parts"].get(part, 0)
                print(f"    {grown / agents / 1024:6.1f} KiB  {part}")


if __name__ == "__main__":
    if "--measure" in sys.argv:
        result = measure(int(sys.argv[sys.argv.index("--measure") + 1]), "--traced" in sys.argv)
        print(json.dumps(result))
    else:
        main()
