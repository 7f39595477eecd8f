"""Run a command of a Cindy tree (`manage.py runagents`) with its event loop and passes timed from outside.

    python bench/gateway_probe.py OUT.json manage.py runagents [ARGS ...]

Nothing of the product is changed; the probe uses public APIs only, so a checkout of an earlier commit is
measured the same way (bench/bench_thousand.py, `--against`):
- an asyncio event-loop policy whose loops get a probe thread: every PROBE_SECONDS it hands the loop a
  callback (`call_soon_threadsafe`) and records how late it runs: the loop's stall. While a callback is
  overdue by more than STALL_SECONDS the thread samples the loop thread's stack (`sys._current_frames`)
  every SAMPLE_SECONDS: what blocked the loop, counted by its innermost frames;
- the gateway's pass (`engine.gateway.Gateway.run_once`, full or follow-up) timed by wrapping it: its wall
  time from start to end, awaits included (a pass waiting for the database thread is a slow pass).
Both threads name themselves `bench-...` for the kernel, and the bench leaves their CPU out of the tree's
(the loop's own part of each probe, a wake-up every PROBE_SECONDS, stays in). Every second, and at exit,
OUT.json is replaced with what was recorded, in CLOCK_MONOTONIC seconds
(the bench's `time.monotonic()` on the same machine): {"passes": [[end, seconds, follow_up], ...],
"stalls": [[at, seconds], ...] (every probe later than NOTE_SECONDS), "probes": N, "stacks": [[at, stack],
...], "steps": {name: [[end, seconds], ...]} (each step of the passes timed the same way), "slow": [[end,
seconds, [[step, seconds], ...]], ...] (each pass over STALL_SECONDS, with its steps' times: the rest of
its wall time is outside the steps, in the pass's own reads and its waits for the database thread),
"busy": [[at, thread, stack], ...] (the other threads' stacks, sampled every SAMPLE_SECONDS while a pass
has run for over STALL_SECONDS: what the pass was waiting for)}.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import functools
import gc
import json
import os
import runpy
import sys
import threading
import time
import traceback

PROBE_SECONDS = 0.01
STALL_SECONDS = 0.05
SAMPLE_SECONDS = 0.02
NOTE_SECONDS = 0.005
#: prctl(2): set the calling thread's name.
PR_SET_NAME = 15
STACK_DEPTH = 14
#: A busy thread's sample: its innermost BUSY_DEPTH frames of the measured tree's code, then its innermost frame.
BUSY_DEPTH = 6
#: A database statement of the gateway's that took longer is recorded with its SQL.
SLOW_STATEMENT_SECONDS = 0.02
#: Innermost frames of a thread that is waiting for work, not working.
IDLE_FRAMES = frozenset({"_worker", "wait", "get", "select", "_wait_for_tstate_lock"})


class Record:
    def __init__(self, path: str, root: str = "") -> None:
        self.path = path
        self.root = root  # the measured tree's directory: its frames name what a busy thread was doing
        #: Reentrant: a garbage collection may start while a thread holds it (copying the lists in
        #: `write`), and the collection's callback (`time_collections`) takes it in that same thread.
        self.lock = threading.RLock()
        self.passes: list[list] = []
        self.stalls: list[list] = []
        self.probes = 0
        self.stacks: list[list] = []  # [at, stack]
        self.steps: dict[str, list] = {}  # step name -> [[end, seconds], ...]
        self.slow: list[list] = []  # [end, seconds, [[step, seconds], ...]]
        self.busy: list[list] = []  # [at, thread name, stack]
        #: [end, seconds, generation, objects collected]: each collection over NOTE_SECONDS
        self.collections: list[list] = []
        self.statements: list[list] = []  # [end, seconds, thread name, SQL]: each over SLOW_STATEMENT_SECONDS
        #: [at, pymalloc blocks in use, bytes of this record as last written]: every write, so the bench
        #: can tell Python's small objects from the rest of the RSS, and what the probe itself holds.
        self.memory: list[list] = []
        self.pass_begun: float | None = None  # the running pass's start, for the probe's sampling
        self.pass_steps: list[list] = []  # the running pass's steps so far

    def write(self) -> None:
        with contextlib.suppress(OSError):
            written = os.path.getsize(self.path)
            self.memory.append([round(time.monotonic(), 3), sys.getallocatedblocks(), written])
        with self.lock:
            data = {
                "passes": list(self.passes),
                "stalls": list(self.stalls),
                "probes": self.probes,
                "stacks": list(self.stacks),
                "steps": {name: list(times) for name, times in self.steps.items()},
                "slow": list(self.slow),
                "busy": list(self.busy),
                "statements": list(self.statements),
                "collections": list(self.collections),
                "memory": list(self.memory),
            }
        tmp = f"{self.path}.tmp"
        with open(tmp, "w") as out:
            json.dump(data, out)
        os.replace(tmp, self.path)


def _stack(frame) -> str:
    """The innermost STACK_DEPTH frames, outermost first, as 'file:line function' lines."""
    frames = traceback.extract_stack(frame)[-STACK_DEPTH:]
    return "\n".join(f"{f.filename.rsplit('/', 3)[-3:]!s}:{f.lineno} {f.name}" for f in frames)


def bench_thread(name: str) -> None:
    """Name the calling thread `bench-...` for the kernel (/proc/PID/task/TID/comm), so that the bench
    leaves this instrument's own CPU out of the tree's (bench_scale.py, `_thread_cpu`)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, f"bench-{name}"[:15].encode(), 0, 0, 0)


def probe(loop: asyncio.AbstractEventLoop, loop_thread: int, record: Record) -> None:
    """Hand the loop a callback every PROBE_SECONDS and record its lateness; sample the loop thread's
    stack while one is overdue."""
    bench_thread("probe")
    while not loop.is_closed():
        ran = threading.Event()
        sent = time.monotonic()
        try:
            loop.call_soon_threadsafe(ran.set)
        except RuntimeError:  # the loop closed meanwhile
            return
        if not ran.wait(STALL_SECONDS):
            while not ran.wait(SAMPLE_SECONDS):
                _sample_busy(loop_thread, record)
                frame = sys._current_frames().get(loop_thread)
                if frame is not None:
                    with record.lock:
                        record.stacks.append([round(time.monotonic(), 4), _stack(frame)])
                if loop.is_closed():
                    return
        else:
            _sample_busy(loop_thread, record)
        late = time.monotonic() - sent
        with record.lock:
            record.probes += 1
            if late > NOTE_SECONDS:
                record.stalls.append([round(sent, 4), round(late, 4)])
        time.sleep(PROBE_SECONDS)


def _sample_busy(loop_thread: int, record: Record) -> None:
    """While a pass has run for over STALL_SECONDS, the stacks of the threads other than the loop's and
    the bench's own (the database thread, the task pool's): what the pass is waiting for."""
    begun = record.pass_begun
    if begun is None or time.monotonic() - begun < STALL_SECONDS:
        return
    names = {t.ident: t.name for t in threading.enumerate()}
    at = round(time.monotonic(), 4)
    mine = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        name = names.get(ident, "?")
        if ident in (loop_thread, mine) or name.startswith("probe"):
            continue
        frames = traceback.extract_stack(frame)
        if frames[-1].name in IDLE_FRAMES:
            continue  # a pool thread waiting for work, a thread waiting on its event
        product = [
            f"{f.filename[len(record.root) + 1 :]}:{f.lineno} {f.name}"
            for f in frames
            if f.filename.startswith(record.root)
        ]
        innermost = f"{frames[-1].filename.rsplit('/', 3)[-3:]!s}:{frames[-1].lineno} {frames[-1].name}"
        with record.lock:
            record.busy.append([at, name, "\n".join([*product[-BUSY_DEPTH:], innermost])])


class ProbedPolicy(asyncio.DefaultEventLoopPolicy):
    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record
        self.probed = False

    def new_event_loop(self):
        loop = super().new_event_loop()
        if not self.probed:  # the gateway's loop: the first one the command makes
            self.probed = True
            original = loop.run_forever

            def run_forever():
                thread = threading.Thread(
                    target=probe, args=(loop, threading.get_ident(), self.record), daemon=True, name="probe"
                )
                thread.start()
                return original()

            loop.run_forever = run_forever
        return loop


def _time_steps(gateway, record: Record) -> None:
    """Time each step of the gateway's passes (its `run`), by the step's name."""
    for name, step in gateway.steps.items():
        run = step.run
        times = record.steps.setdefault(name, [])

        async def timed(run=run, times=times, name=name):
            begun = time.monotonic()
            try:
                return await run()
            finally:
                end = time.monotonic()
                with record.lock:
                    times.append([round(end, 4), round(end - begun, 4)])
                    record.pass_steps.append([name, round(end - begun, 4)])

        step.run = timed


def _time_call(owner, attribute: str, name: str, record: Record) -> None:
    """Time a synchronous function of a pass outside its steps (run on the database thread), where the
    measured tree has it, as a step named `name`."""
    function = getattr(owner, attribute, None)
    if function is None:
        return
    times = record.steps.setdefault(name, [])

    @functools.wraps(function)
    def timed(*args, **kwargs):
        begun = time.monotonic()
        try:
            return function(*args, **kwargs)
        finally:
            end = time.monotonic()
            with record.lock:
                times.append([round(end, 4), round(end - begun, 4)])
                record.pass_steps.append([name, round(end - begun, 4)])

    setattr(owner, attribute, timed)


def time_statements(record: Record) -> None:
    """Record each database statement of the gateway's that takes over SLOW_STATEMENT_SECONDS (Django's
    execute wrappers, on every connection the process opens)."""
    from django.db.backends.signals import connection_created

    def wrapper(execute, sql, params, many, context):
        begun = time.monotonic()
        try:
            return execute(sql, params, many, context)
        finally:
            end = time.monotonic()
            if end - begun > SLOW_STATEMENT_SECONDS:
                with record.lock:
                    record.statements.append(
                        [
                            round(end, 4),
                            round(end - begun, 4),
                            threading.current_thread().name,
                            str(sql)[:160],
                        ]
                    )

    def created(sender, connection, **kwargs):
        if wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(wrapper)

    connection_created.connect(created, weak=False)


def time_collections(record: Record) -> None:
    """Record each garbage collection of the process that takes over NOTE_SECONDS (`gc.callbacks`): it
    holds the interpreter, so every thread waits for it, and the stall probe sees it only when a probe
    callback was already waiting."""
    started: list[float] = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start":
            started[:] = [time.monotonic()]
        elif started:
            end = time.monotonic()
            if end - started[0] > NOTE_SECONDS:
                with record.lock:
                    record.collections.append(
                        [round(end, 4), round(end - started[0], 4), info["generation"], info["collected"]]
                    )

    gc.callbacks.append(callback)


def time_passes(record: Record) -> None:
    import engine.gateway
    from engine.gateway import Gateway

    _time_call(engine.gateway, "parameters_refresh", "(parameters)", record)
    _time_call(Gateway, "_close_old_connections", "(connections)", record)

    run_once = Gateway.run_once
    wrapped: set[int] = set()

    @functools.wraps(run_once)
    async def timed(self, *args, **kwargs):
        if id(self) not in wrapped:
            wrapped.add(id(self))
            _time_steps(self, record)
        begun = time.monotonic()
        with record.lock:
            record.pass_begun, record.pass_steps = begun, []
        try:
            return await run_once(self, *args, **kwargs)
        finally:
            end = time.monotonic()
            with record.lock:
                record.passes.append([round(end, 4), round(end - begun, 4), bool(kwargs.get("follow_up"))])
                if end - begun > STALL_SECONDS:
                    record.slow.append([round(end, 4), round(end - begun, 4), record.pass_steps])
                record.pass_begun = None

    Gateway.run_once = timed


def main() -> None:
    out, script, *args = sys.argv[1:]
    root = os.path.dirname(os.path.abspath(script))
    record = Record(out, root)
    asyncio.set_event_loop_policy(ProbedPolicy(record))
    sys.path.insert(0, root)
    sys.argv = [script, *args]

    def writer() -> None:
        bench_thread("writer")
        while True:
            time.sleep(1.0)
            record.write()

    threading.Thread(target=writer, daemon=True, name="probe writer").start()
    atexit.register(record.write)
    import django  # the passes are wrapped once Django's apps are loaded

    setup = django.setup

    def setup_then_wrap(*a, **kw):
        setup(*a, **kw)
        time_passes(record)
        time_statements(record)
        time_collections(record)

    django.setup = setup_then_wrap
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
