"""Scale benchmarks: whole process trees, as an operator's machine sees them. Prints figures; asserts nothing.

- idle CPU of the whole tree: a real `runagents` with 100 sandbox agents, its `runworkers` pool and the
  pool's processes (sentinel, pusher, monitor, workers), summed over every thread of every descendant
  from /proc (the scheduler's run time, in nanoseconds: /proc/PID/task/TID/schedstat), with
  the tree's PSS (/proc/PID/smaps_rollup); beside the pool polling the queue every 50 ms as before
  and the gateway reading the wake-up counter every 50 ms (CINDY_Q_WAKE=false,
  CINDY_WAKE_POLL_SECONDS=0.05), in the same run: the time average over the whole idle span (its CPU
  seconds / its wall seconds, five consecutive 10 s windows) beside the goal, the worst window beside it;
- the inbound path per message: CPU of every process of that tree from a sandbox message to the
  planning request reaching the LLM (gateway ingest, tick, dispatch; the worker's turn up to the call),
  the issue's goal; and on to the reply stored (the plan's bookkeeping, the gateway applying it and
  sending), less the tree's time-averaged idle CPU over the same wall time: the mean over every message
  beside the goal, the costliest message beside it;
- the dialog refresh at 1,000 agents with a 100 ms Telegram round trip: the slowest gateway pass of the
  `dialogs` step over one refresh period, in process.

Run: .venv/bin/python bench/bench_scale.py [tree|telegram-inbound|refresh|telegram ...]
     [--against REF [--rounds N]]
Each part runs in its own process on its own temporary database and touches nothing else. With
`--against`, each part also runs on a checkout of REF, in turns with this tree, started and measured
by this script (the same instrument for both): a before/after ratio from one run.
Every figure beside a goal is declared with its statistic and printed through `figures.py`, which
refuses a negative figure or a statistic other than the goal's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The tree measured: this one, or (`--against`) a checkout of an earlier commit, measured by this script.
ROOT = Path(os.environ.get("CINDY_BENCH_ROOT") or Path(__file__).resolve().parent.parent)
sys.path.insert(0, str(ROOT / "bench"))
# What the measured checkout's bench/ lacks (figures.py, processes.py) comes from this script's folder.
sys.path.insert(1, str(Path(__file__).resolve().parent))

from bench_engine import _say_and_wait, _wait, make_agent, setup_django  # noqa: E402
from figures import Declared, Goal, Statistic, Windows, samples  # noqa: E402
from processes import stop_process  # noqa: E402


def die_with_parent_hook():
    """Run between fork and exec: the child gets SIGKILL when this process dies (Linux's
    PR_SET_PDEATHSIG), so a bench stopped with Ctrl-C or killed leaves no gateway or part behind.

    `engine.lifeline.die_with_parent_hook` does the same for the product, but this script must not
    import the product: its parts import the measured checkout's packages (`--against`), and an
    `engine` imported from this tree first would be the one they got."""
    import ctypes
    import signal

    prctl, parent = ctypes.CDLL(None, use_errno=True).prctl, os.getpid()

    def hook() -> None:
        prctl(1, signal.SIGKILL)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


AGENTS = 100
IDLE_SAMPLES = 5
IDLE_SECONDS = 10.0
INBOUND_RUNS = 5
INBOUND_MESSAGES = 4
#: Idle: CPU seconds of the whole tree over the measured span / its wall seconds, beside the worst window.
IDLE = Declared(
    "idle CPU of the whole tree",
    Statistic.TIME_AVERAGE,
    "% of a core",
    Goal(0.01, "≤ 1% of a core, time-averaged", Statistic.TIME_AVERAGE),
)
IDLE_WORST = Declared("idle CPU of the whole tree, worst window", Statistic.WORST, "% of a core")
#: Inbound: the tree's CPU over every message measured / their number (what each message costs).
TO_REQUEST = Declared(
    "inbound message → planning request, CPU of the tree per message",
    Statistic.MEAN,
    "ms",
    Goal(15, "≤ 15 ms per message, mean", Statistic.MEAN),
)
TO_REQUEST_WORST = Declared("the same, the costliest message", Statistic.WORST, "ms")
TO_REPLY = Declared("inbound message → reply, CPU of the tree per message", Statistic.MEAN, "ms")
#: After each message's graph is done, the tree settles this long before the next message.
SETTLE_SECONDS = 0.5
REFRESH_AGENTS = 1000
REFRESH_ROUND_TRIP = 0.1
REFRESH_PASS = Declared(
    "dialog refresh, gateway pass", Statistic.WORST, "ms", Goal(50, "≤ 50 ms, every pass", Statistic.WORST)
)
#: As before: the task pool polling the queue and the gateway reading the wake-up counter every 50 ms.
POLLING = {"CINDY_Q_WAKE": "false", "CINDY_Q_POLL_SECONDS": "0.05", "CINDY_WAKE_POLL_SECONDS": "0.05"}


# --- process trees from /proc ----------------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree_pids(root: int) -> list[int]:
    children, found, todo = _children_map(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _cpu(pid: int) -> float:
    """The process's CPU seconds from /proc/PID/stat (user + system, in clock ticks of 10 ms)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


#: The kernel name of a thread the bench put in a measured process (bench/gateway_probe.py): not counted.
BENCH_THREAD = "bench-"


def _thread_cpu(pid: int) -> dict[tuple[int, int], float]:
    """Each thread's CPU seconds, in nanoseconds from /proc/PID/task/TID/schedstat (the scheduler's
    run time). A message costs tens of milliseconds, which the 10 ms ticks of /proc/PID/stat round
    per process; the process's figure stands in where schedstat cannot be read. A thread the bench
    named `bench-...` (its probe in the gateway) is left out."""
    found: dict[tuple[int, int], float] = {}
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                if (task / "comm").read_text().startswith(BENCH_THREAD):
                    continue  # the bench's own instrument in the process (bench/gateway_probe.py)
            found[(pid, int(task.name))] = int((task / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return {(pid, 0): _cpu(pid)}
    return found


def tree_cpu(root: int) -> dict[tuple[int, int], float]:
    """CPU seconds of every thread of every process of the tree, by (pid, tid)."""
    return {key: seconds for pid in tree_pids(root) for key, seconds in _thread_cpu(pid).items()}


def cpu_between(before: dict, after: dict) -> float:
    """CPU seconds the tree spent between two readings (a thread born meanwhile counts from zero; one
    that ended meanwhile is left out: the tree's threads and processes live as long as it does)."""
    return sum(seconds - before.get(key, 0.0) for key, seconds in after.items())


def tree_pss_mib(root: int) -> float:
    total = 0
    for pid in tree_pids(root):
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)
    return total / 1024


# --- a real runagents ------------------------------------------------------------------------------------


def _start(env: dict[str, str], log: Path) -> subprocess.Popen:
    from agents.models import AgentLease
    from engine.models import ProcessHeartbeat

    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent_hook(),  # a killed bench leaves no gateway behind
    )
    _wait(lambda: AgentLease.objects.count() >= AGENTS, "every lease", log)
    _wait(
        lambda: ProcessHeartbeat.objects.filter(kind=ProcessHeartbeat.Kind.WORKERS).exists(), "the pool", log
    )
    return process


def _idle_windows(root: int) -> Windows:
    """IDLE_SAMPLES consecutive windows of IDLE_SECONDS: each reading ends one window and starts the
    next, so the windows cover the whole span and its time average is the span's."""
    reading, at = tree_cpu(root), time.monotonic()
    windows = []
    for _ in range(IDLE_SAMPLES):
        time.sleep(IDLE_SECONDS)
        after, end = tree_cpu(root), time.monotonic()
        windows.append((cpu_between(reading, after), end - at))
        reading, at = after, end
    return Windows(tuple(windows))


def idle_text(now: Windows, before: Windows) -> str:
    """The idle figures: the time average beside its goal, the worst window, and the median of the
    windows labelled as such (what earlier runs printed, not compared to the goal)."""
    return (
        f"{IDLE.figure(now.time_average).line()} (as before: {IDLE.figure(before.time_average, goal=False).text}); "
        f"{IDLE_WORST.figure(now.worst).text} of {len(now.windows)} × {IDLE_SECONDS:g} s (as before: "
        f"{IDLE_WORST.figure(before.worst).text}); median of the windows {now.median:.2%}, not compared"
    )


def reply_text(now: list[float], before: list[float]) -> str:
    """CPU per message up to the reply (seconds per message in, ms printed): the mean, no goal."""
    ms = samples(TO_REPLY, [v * 1000 for v in now])
    was = samples(TO_REPLY, [v * 1000 for v in before])
    return f"{TO_REPLY.figure(statistics.fmean(ms)).text} (as before: {TO_REPLY.figure(statistics.fmean(was)).text})"


def inbound_text(now: list[float], before: list[float]) -> str:
    """CPU per message up to the planning request (seconds per message in, ms printed): the mean
    beside its goal, the costliest message, the median labelled."""
    ms = samples(TO_REQUEST, [v * 1000 for v in now])
    was = samples(TO_REQUEST, [v * 1000 for v in before])
    return (
        f"{TO_REQUEST.figure(statistics.fmean(ms)).line()} (as before: "
        f"{TO_REQUEST.figure(statistics.fmean(was), goal=False).text}); "
        f"{TO_REQUEST_WORST.figure(max(ms)).text} (as before: {TO_REQUEST_WORST.figure(max(was)).text}); "
        f"median {statistics.median(ms):.0f} ms, not compared; {len(ms)} messages"
    )


def _env(server_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "GEMINI_BASE_URL": server_url,
        "GOOGLE_GEMINI_API_KEY": "bench",
        "DEFAULT_AGENT_LLM": "gemini",
        "CINDY_SESSION_KEY": "bench-only",
        "CINDY_READ_DELAY_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
    }


def _agents():
    from agents.models import Agent

    for i in range(AGENTS):
        make_agent(f"Scale{i:03d}")
    Agent.objects.update(start_typing_delay=1, typing_speed=1000)
    return list(Agent.objects.order_by("pk"))


class _PerMessage:
    """The fake LLM's responder, reading the tree's CPU as each planning request arrives, and the CPU
    one inbound message costs: (up to that request, up to the end of `send`), less the idle CPU."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.at_request: list[tuple[dict[int, float], float]] = []
        self.idle_rate = 0.0

    def __call__(self, _request):
        from cindy_site.testing.fake_llm import FakeReply

        self.at_request.append((tree_cpu(self.pid), time.monotonic()))
        return FakeReply(text=json.dumps([{"kind": "send", "text": "hi!"}]))

    def measure(self, send) -> tuple[float, float]:
        del self.at_request[:]
        before, wall = tree_cpu(self.pid), time.monotonic()
        send()
        after, end = tree_cpu(self.pid), time.monotonic()
        cpu, at = self.at_request[0]
        return (
            cpu_between(before, cpu) - self.idle_rate * (at - wall),
            cpu_between(before, after) - self.idle_rate * (end - wall),
        )


def _measure(env: dict[str, str], agents, log: Path, server) -> dict[str, object]:
    """One runagents: its tree's idle CPU and PSS, then CPU per inbound message: up to the planning
    request reaching the LLM (the fake server reads the tree's CPU as each request arrives), and up
    to the reply stored."""
    process = _start(env, log)
    per = _PerMessage(process.pid)
    try:
        chosen = [agents[(i * 37) % len(agents)] for i in range(INBOUND_RUNS * INBOUND_MESSAGES)]
        for agent in dict.fromkeys(chosen):  # each chat exists and has had a turn; the workers are warm
            _say_and_wait(agent, "warm-up", log)
        time.sleep(IDLE_SECONDS)  # the replies' graphs finish, the typing indicators expire
        idle = _idle_windows(process.pid)
        pss = tree_pss_mib(process.pid)
        per.idle_rate = idle.time_average
        server.set_responder(per)
        to_request, to_reply = [], []
        for i, agent in enumerate(chosen):

            def send(agent=agent, text=f"message {i}") -> None:
                _say_and_wait(agent, text, log)
                _finished(agent, log)

            request, spent = per.measure(send)
            to_request.append(request)
            to_reply.append(spent)
        server.set_responder(None)
        return {"idle": idle, "pss": pss, "request": to_request, "reply": to_reply}
    finally:
        stop_process(process)


def _finished(agent, log: Path) -> None:
    """Wait until the agent's graphs are done and the tree has had SETTLE_SECONDS more: the tail of a
    message's work (the send's echo, the graph's end) is counted with it, not with the next one."""
    from conversations.models import TaskGraph

    _wait(
        lambda: not TaskGraph.objects.filter(
            conversation__agent=agent, status=TaskGraph.Status.ACTIVE
        ).exists(),
        f"{agent.name}'s graph done",
        log,
    )
    time.sleep(SETTLE_SECONDS)


def part_tree() -> None:
    from cindy_site.testing.fake_llm import FakeLLMServer

    server = FakeLLMServer().start()
    server.set_default_reply(json.dumps([{"kind": "send", "text": "hi!"}]))
    agents = _agents()
    log = Path(tempfile.mkdtemp()) / "gateway.log"
    try:
        env = _env(server.url)
        before = _measure({**env, **POLLING}, agents, log, server)
        after = _measure(env, agents, log, server)
    finally:
        server.stop()
    print(
        f"idle CPU of the whole tree (gateway + task pool), {AGENTS} sandbox agents: "
        f"{idle_text(after['idle'], before['idle'])} (before: the pool and the wake-up counter polled every "
        f"50 ms); tree PSS {after['pss']:.0f} MiB (before {before['pss']:.0f} MiB). Leaves out: the fake LLM "
        "server (in the bench's process)."
    )
    print(
        f"inbound message → planning request at the LLM, CPU of every process of the tree per message, "
        f"{AGENTS} sandbox agents: {inbound_text(after['request'], before['request'])} (before: polling every "
        "50 ms), less the tree's time-averaged idle CPU; gateway ingest, tick and dispatch, the worker's turn "
        "up to the request. Leaves out: the fake LLM server and the sandbox writer (the bench's process), "
        "Telegram (sandbox transport)."
    )
    print(
        f"inbound message → reply stored, the same per message: "
        f"{reply_text(after['reply'], before['reply'])}: the above, the reply's "
        "bookkeeping, typing and presence, the send and its echo; no goal of its own."
    )


# --- the dialog refresh at 1,000 agents ------------------------------------------------------------------


def part_refresh() -> None:
    from asgiref.sync import async_to_sync
    from django.conf import settings

    from agents.models import Agent
    from cindy_site.clock import FakeClock, set_clock
    from engine.clients import AgentClient
    from engine.gateway import Gateway
    from engine.upkeep import DIALOG_REFRESH_SECONDS
    from sandbox.transport.transport import SandboxTransport

    class SlowTelegram:
        def __init__(self, inner) -> None:
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        async def dialogs(self, *, limit: int = 100):
            await asyncio.sleep(REFRESH_ROUND_TRIP)
            return await self.inner.dialogs(limit=limit)

    # The refresh reads lists only with unread scans off, and at its plain 60 s (not stretched for the
    # gateway's size): the most refreshes a pass can start.
    settings.CINDY_UNREAD_SCAN_SECONDS = 0
    settings.CINDY_DIALOG_READS_PER_SECOND = 0
    clock = FakeClock()
    set_clock(clock)
    Agent.objects.bulk_create(
        Agent(name=f"Slow{i:04d}", phone=f"+1555{i:07d}", transport="sandbox") for i in range(REFRESH_AGENTS)
    )
    gateway = Gateway(gateway_id="bench-refresh", enqueue=lambda node_id, owner: None, tick_seconds=0)
    for agent in Agent.objects.order_by("pk"):
        inner = SandboxTransport(agent)
        async_to_sync(inner.connect)()
        gateway.clients[agent.pk] = AgentClient(agent=agent, transport=SlowTelegram(inner), connected=True)
    passes: list[float] = []

    async def run() -> None:
        for _ in range(int(DIALOG_REFRESH_SECONDS) + 1):
            begun = time.perf_counter()
            await gateway.steps["dialogs"].run()
            passes.append(time.perf_counter() - begun)
            await asyncio.sleep(0.02)  # the refreshes run meanwhile, as between real passes
            clock.advance(1)
        await gateway.steps["dialogs"].settle()

    async_to_sync(run)()
    worst = max(passes) * 1000
    serial = REFRESH_AGENTS * REFRESH_ROUND_TRIP  # the pass before: every agent's call in a row
    print(
        f"dialog refresh, {REFRESH_AGENTS} agents, {REFRESH_ROUND_TRIP * 1000:.0f} ms round trip, slowest "
        f"pass: {REFRESH_PASS.figure(worst).line()}; median {statistics.median(passes) * 1000:.1f} ms over "
        f"{len(passes)} passes, not compared (serially in the pass as before: {serial:.0f} s once a minute); at most "
        f"{gateway.steps['dialogs'].refreshes.cap.most_running} refreshes at once "
        f"(CINDY_UPKEEP_CONCURRENCY={settings.CINDY_UPKEEP_CONCURRENCY}); unread scans off and the period not "
        "stretched (CINDY_DIALOG_READS_PER_SECOND=0). Leaves out: Telegram itself (the sandbox transport "
        "with the round trip added)."
    )


# --- Telegram agents on the MTProto stand-in ---------------------------------------------------------------

TELEGRAM_COUNTS = (1, 100)
#: Runs per count (CINDY_BENCH_TELEGRAM_RUNS overrides: one run at 1,000 agents takes minutes).
TELEGRAM_RUNS = int(os.environ.get("CINDY_BENCH_TELEGRAM_RUNS") or 5)
TELEGRAM_INBOUND_AGENTS = 100


@contextlib.contextmanager
def _telegram_world():
    """The fake LLM server and the MTProto stand-in, running: (server, stand-in, env, gateway log)."""
    from cindy_site.testing.fake_llm import FakeLLMServer

    try:
        from cindy_site.testing.mtproto import StandIn
    except ImportError:  # a checkout from before the stand-in moved out of `conversations` (--against)
        from conversations.testing.mtproto import StandIn

    server = FakeLLMServer().start()
    standin = StandIn().start()
    tmp = Path(tempfile.mkdtemp())
    try:
        yield server, standin, _telegram_env(standin, tmp, server.url), tmp / "gateway.log"
    finally:
        standin.stop()
        server.stop()


def _telegram_env(standin, tmp: Path, server_url: str) -> dict[str, str]:
    key_path = tmp / "standin.pub.pem"
    key_path.write_bytes(standin.key.public_pem)
    return {
        **_env(server_url),
        "TELEGRAM_API_ID": "1",
        "TELEGRAM_API_HASH": "standin",
        "CINDY_TELEGRAM_SERVER": standin.address,
        "CINDY_TELEGRAM_SERVER_KEY": str(key_path),
        "CINDY_MEDIA_ROOT": str(tmp / "media"),
    }


def _telegram_accounts(standin, env: dict[str, str], count: int) -> None:
    """`count` Telegram agents, each a stand-in account signed in with a key the stand-in registers for it,
    stored in its database session as `telegram_login` stores it (no key exchange and login per account:
    1,000 logins took over ten minutes on two shared cores)."""
    import datetime as dt

    from django.conf import settings

    from agents.models import Agent, AgentLease

    settings.CINDY_SESSION_KEY = env["CINDY_SESSION_KEY"]  # the gateway's, to encrypt the keys for it
    holder, far = "bench-signin:1", dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    for i in range(Agent.objects.filter(transport="telegram").count(), count):
        # A test number: its login code is 11111.
        standin_agent(standin, name=f"Tg{i:04d}", phone=f"+999661{i:04d}", holder=holder, until=far)
    AgentLease.objects.filter(holder=holder).delete()  # the gateway takes its own


def standin_agent(standin, *, name: str, phone: str, holder: str, until) -> None:
    """One Telegram agent signed in to the stand-in: its account (username `name` in lower case),
    the agent, a lease `holder` keeps until `until` (the session is stored under a held lease), and
    its database session with a key the stand-in registered for the account."""
    from agents.models import Agent, AgentLease
    from agents.telegram_server import STANDIN_DC_ID
    from agents.telethon_session import DatabaseSession

    user = standin.run(standin.world.create_user, phone=phone, first_name=name, username=name.lower())
    agent = Agent.objects.create(
        name=name,
        phone=phone,
        instructions="You are a bench agent.",
        transport="telegram",
        llm="gemini",
        telegram_user_id=user.id,
    )
    AgentLease.objects.create(
        agent=agent, holder=holder, acquired_at=until, heartbeat_at=until, expires_at=until
    )
    session = DatabaseSession(agent, gateway_id=holder)
    session.set_dc(STANDIN_DC_ID, standin.host, standin.port)
    session.auth_key = standin.run(_signed_in_key, standin, user.id)
    session.flush()


def _signed_in_key(standin, user_id: int):
    """`StandIn.authorize`, done by hand on a checkout from before it (`--against`)."""
    if hasattr(standin, "authorize"):
        return standin.authorize(user_id)
    from telethon.crypto import AuthKey

    try:
        from cindy_site.testing.mtproto.context import KeyState
    except ImportError:
        from conversations.testing.mtproto.context import KeyState
    auth_key = AuthKey(os.urandom(256))
    standin.keys[auth_key.key_id] = KeyState(auth_key, salt=standin._new_salt(), user_id=user_id)
    return auth_key


def _start_telegram(env: dict[str, str], count: int, log: Path) -> subprocess.Popen:
    """A runagents, once `count` Telegram accounts are connected (each writes its sticker access)."""
    from media_catalog.models import StickerAccess

    StickerAccess.objects.all().delete()
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "manage.py"), "runagents"],
        env=env,
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent_hook(),  # a killed bench leaves no gateway behind
    )
    try:
        # 1,000 accounts connect in minutes on two busy cores.
        _wait(
            lambda: StickerAccess.objects.count() >= count,
            f"{count} connected accounts",
            log,
            max(600, 3 * count),
        )
    except BaseException:
        stop_process(process)
        raise
    return process


def _telegram_memory(env: dict[str, str], count: int, log: Path) -> tuple[float, float]:
    """A runagents holding `count` connected Telegram agents: the gateway's RSS and the tree's PSS, MiB."""
    process = _start_telegram(env, count, log)
    try:
        time.sleep(IDLE_SECONDS)  # the first refreshes and scans settle
        status = Path(f"/proc/{process.pid}/status").read_text()
        rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]) / 1024
        return rss, tree_pss_mib(process.pid)
    finally:
        stop_process(process)


def part_telegram() -> None:
    from agents.models import Agent

    counts = [int(c) for c in os.environ.get("CINDY_BENCH_TELEGRAM_COUNTS", "").split(",") if c] or list(
        TELEGRAM_COUNTS
    )
    with _telegram_world() as (_server, standin, env, log):
        for count in counts:
            started = time.monotonic()
            _telegram_accounts(standin, env, count)
            signed = time.monotonic() - started
            held = list(
                Agent.objects.filter(transport="telegram").order_by("pk").values_list("pk", flat=True)
            )
            Agent.objects.filter(pk__in=held[count:]).update(disabled=True)
            rss, pss = zip(*(_telegram_memory(env, count, log) for _ in range(TELEGRAM_RUNS)), strict=True)
            print(
                f"gateway RSS with {count} Telegram agent{'s' if count > 1 else ''} connected to the MTProto "
                f"stand-in: median {statistics.median(rss):.0f} MiB (whole tree with the task pool: PSS "
                f"{statistics.median(pss):.0f} MiB), {TELEGRAM_RUNS} runs; no goal set, no before figure (the "
                f"earlier bench never loaded Telethon). Leaves out: the stand-in and the fake LLM (the bench's "
                f"process); sign-in of the accounts took {signed:.0f} s."
            )


def telegram_say_and_wait(standin, account: int, agent, person: int, text: str, log: Path) -> None:
    """`person` writes `text` to the agent's account through the stand-in; returns once the agent's
    reply is in that chat and its graph is done."""
    world = standin.world
    key = world.dm_key(account, person)
    sent = standin.run(world.send, person, key, text)[0]
    _wait(
        lambda: any(m.sender == account and m.id > sent.id for m in standin.run(world.history, key)),
        f"{agent.name}'s reply",
        log,
    )
    _finished(agent, log)


def _telegram_inbound(env: dict[str, str], server, standin, person: int, log: Path) -> dict[str, object]:
    """A runagents holding TELEGRAM_INBOUND_AGENTS connected Telegram agents: the tree's idle CPU, then
    CPU per message a person sends to one of them through the stand-in, up to the planning request
    and up to the reply (the agent's message in the stand-in's chat, its graph done)."""
    from agents.models import Agent

    world = standin.world
    agents = list(Agent.objects.filter(transport="telegram", disabled=False).order_by("pk"))
    accounts = {a.pk: world.user_by_phone(a.phone).id for a in agents}
    process = _start_telegram(env, len(agents), log)
    per = _PerMessage(process.pid)

    def say_and_wait(agent, text: str) -> None:
        telegram_say_and_wait(standin, accounts[agent.pk], agent, person, text, log)

    try:
        server.set_responder(per)
        chosen = [agents[(i * 37) % len(agents)] for i in range(INBOUND_RUNS * INBOUND_MESSAGES)]
        for agent in dict.fromkeys(chosen):  # each chat exists and has had a turn
            say_and_wait(agent, "warm-up")
        time.sleep(IDLE_SECONDS)
        idle = _idle_windows(process.pid)
        per.idle_rate = idle.time_average
        to_request, whole = zip(
            *(
                per.measure(lambda a=agent, i=i: say_and_wait(a, f"message {i}"))
                for i, agent in enumerate(chosen)
            ),
            strict=True,
        )
        return {"idle": idle, "request": list(to_request), "whole": list(whole)}
    finally:
        server.set_responder(None)
        stop_process(process)


def part_telegram_inbound() -> None:
    from agents.models import Agent

    with _telegram_world() as (server, standin, env, log):
        _telegram_accounts(standin, env, TELEGRAM_INBOUND_AGENTS)
        Agent.objects.update(start_typing_delay=1, typing_speed=1000)
        person = standin.run(standin.world.create_user, phone="+9996690000", first_name="Pat").id
        before = _telegram_inbound({**env, **POLLING}, server, standin, person, log)
        after = _telegram_inbound(env, server, standin, person, log)
    print(
        f"Telegram: inbound message → planning request at the LLM, CPU of every process of the tree per "
        f"message, {TELEGRAM_INBOUND_AGENTS} Telegram agents connected to the MTProto stand-in: "
        f"{inbound_text(after['request'], before['request'])} (before: polling every 50 ms), less the tree's "
        "time-averaged idle CPU. Leaves out: the stand-in and the fake LLM (the bench's process)."
    )
    print(
        f"Telegram: inbound message → reply sent, the same per message: "
        f"{reply_text(after['whole'], before['whole'])}; idle CPU of that tree: "
        f"{idle_text(after['idle'], before['idle'])}."
    )


PARTS = {
    "tree": part_tree,
    "telegram-inbound": part_telegram_inbound,
    "refresh": part_refresh,
    "telegram": part_telegram,
}


def run_part(part: str, env: dict[str, str], root: Path | None = None) -> None:
    """Run one part in a process of its own, on a tree: this one, or `root`, a checkout of an earlier
    commit (`--against`), whose processes this script starts and measures the same way."""
    environ = {**os.environ, "CINDY_BENCH_ROOT": str(root)} if root else None
    result = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--part", part, "--env", json.dumps(env)],
        capture_output=True,
        text=True,
        env=environ,
        preexec_fn=die_with_parent_hook(),
    )
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    print("\n".join(lines) if lines else f"{part}: failed\n{result.stderr[-2000:]}", flush=True)


def _option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else default


def main() -> None:
    """`bench_scale.py [PART ...] [--against REF [--rounds N]]`: with `--against`, each part runs on a
    checkout of REF (a git worktree in a temporary directory, the same Python environment) and on
    this tree, in turns, N rounds (1 by default): the before and after figures of one run."""
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return
    unknown = [a for a in sys.argv[1:] if a.startswith("-") and a not in ("--against", "--rounds")]
    if unknown:
        sys.exit(f"bench_scale.py: unknown option {unknown[0]} (see --help)")
    wanted = [a for a in sys.argv[1:] if a in PARTS] or list(PARTS)
    against, rounds = _option("--against"), int(_option("--rounds", "1"))
    base = {"SECRET_KEY": "bench-only", "CINDY_ENV_FILE": os.devnull, "LOG_LEVEL": "ERROR"}
    from processes import checkout

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if against:
            trees.insert(
                0, (f"before: {against}", stack.enter_context(checkout(ROOT, against, Path(tmp) / "before")))
            )
        for part in wanted:
            for turn in range(rounds if against else 1):
                for index, (label, root) in enumerate(trees):
                    if against:
                        print(f"[{part}, {label}, round {turn + 1} of {rounds}]", flush=True)
                    path = Path(tmp) / f"{part}-{index}-{turn}.sqlite3"
                    run_part(part, {**base, "CINDY_SQLITE_PATH": str(path)}, root)


if __name__ == "__main__":
    if "--part" in sys.argv:
        args = dict(zip(sys.argv[1::2], sys.argv[2::2], strict=False))
        child_env = json.loads(args["--env"])
        for key in ("DATABASE_URL", "REDIS_URL"):
            if key not in child_env:
                os.environ.pop(key, None)
        setup_django(child_env)
        PARTS[args["--part"]]()
    else:
        main()
