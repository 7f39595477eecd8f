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
...], "steps": {name: [[end, seconds], ...]}} (each step of the passes timed the same way).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import functools
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


class Record:
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.passes: list[list] = []
        self.stalls: list[list] = []
        self.probes = 0
        self.stacks: list[list] = []  # [at, stack]
        self.steps: dict[str, list] = {}  # step name -> [[end, seconds], ...]

    def write(self) -> None:
        with self.lock:
            data = {
                "passes": list(self.passes),
                "stalls": list(self.stalls),
                "probes": self.probes,
                "stacks": list(self.stacks),
                "steps": {name: list(times) for name, times in self.steps.items()},
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
                frame = sys._current_frames().get(loop_thread)
                if frame is not None:
                    with record.lock:
                        record.stacks.append([round(time.monotonic(), 4), _stack(frame)])
                if loop.is_closed():
                    return
        late = time.monotonic() - sent
        with record.lock:
            record.probes += 1
            if late > NOTE_SECONDS:
                record.stalls.append([round(sent, 4), round(late, 4)])
        time.sleep(PROBE_SECONDS)


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

        async def timed(run=run, times=times):
            begun = time.monotonic()
            try:
                return await run()
            finally:
                end = time.monotonic()
                with record.lock:
                    times.append([round(end, 4), round(end - begun, 4)])

        step.run = timed


def time_passes(record: Record) -> None:
    from engine.gateway import Gateway

    run_once = Gateway.run_once
    wrapped: set[int] = set()

    @functools.wraps(run_once)
    async def timed(self, *args, **kwargs):
        if id(self) not in wrapped:
            wrapped.add(id(self))
            _time_steps(self, record)
        begun = time.monotonic()
        try:
            return await run_once(self, *args, **kwargs)
        finally:
            end = time.monotonic()
            with record.lock:
                record.passes.append([round(end, 4), round(end - begun, 4), bool(kwargs.get("follow_up"))])

    Gateway.run_once = timed


def main() -> None:
    out, script, *args = sys.argv[1:]
    record = Record(out)
    asyncio.set_event_loop_policy(ProbedPolicy(record))
    root = os.path.dirname(os.path.abspath(script))
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

    django.setup = setup_then_wrap
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
