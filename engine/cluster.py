"""The task workers (`manage.py runworkers`): django-q2's worker pool, guarded so no death can wedge it.

django-q2's sentinel feeds its workers through multiprocessing queues whose locks are shared by every
worker: an idle worker waits in `Queue.get` holding the queue's read lock. A worker killed there (OOM
killer, an operator's `kill -9`) takes the lock with it, and the respawned and surviving workers then
block on it forever while the pusher keeps taking tasks off the broker. The pusher and the monitor hold
the queues' other locks the same way.

`GuardedSentinel` runs django-q2's pool but treats any sudden death of a pool process that may have
held a queue lock (an idle worker; a busy one holding its timer's lock, which it does only while
putting its result on the result queue; the pusher; the monitor) as a broken cluster: it kills every
process of the pool, builds fresh queues and starts a new pool, at once (it waits on the processes'
sentinels, so a death wakes it). Tasks
in the dead pool's queue are lost, so the planning nodes its gateway had dispatched go back to pending
at once (run by this pool only, they cannot be running anywhere else), and the agents of that gateway
show the outage in their activity stream while it lasts. The LLM calls its processes had in flight are
closed as interrupted (`LLMCall.worker` names the process). A pool run apart from the gateways
(`runagents --no-workers` + `runworkers`) returns every running planning node with no call in flight
to pending itself (the tasks of its lost queue), and the gateway's watchdog re-runs the interrupted
ones at its next check: the work is planned again within seconds in that layout too.

A busy worker that dies inside its task's own code held no queue lock: only that worker is respawned,
and the planning it was running is counted a death and queued again, or failed at
CINDY_TASK_MAX_DEATHS (engine/task_deaths.py).

Before forking its first workers the pool loads the LLM stack planning needs (`preload_task_modules`:
the planning modules, and the SDK and client of each provider in use), so a worker's first task does
not pay the imports and the client set-up (0.4 s or more).

Idle, the pool costs next to nothing: the guard sleeps until the housekeeping or the health row is due
(`guard_pause`; one cycle while a worker is busy, to count its timeout down), the pusher waits for a
wake-up (engine/taskwake.py), the workers and the monitor block on their queues. Per task, every pool
process keeps its database connection (`pool_connections_persistent`) and the monitor stores only
failed tasks (`save_limit: -1`).

Every pool process asks for SIGKILL when the sentinel dies (`engine.lifeline`), and SIGTERM or SIGINT
kill the pool and end the sentinel at once: no handler waits on a lock, so a repeated signal cannot
deadlock it, and nothing of the pool outlives this process. `runagents` starts this command with its
own parent-death signal, so the whole tree dies with the gateway.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import signal
import time
import uuid
from multiprocessing import Event, Process, Value
from multiprocessing.connection import wait
from typing import Any

from django import db
from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from django_q.brokers import Broker
from django_q.cluster import Sentinel, get_mp_context
from django_q.conf import Conf
from django_q.queues import Queue
from django_q.scheduler import scheduler
from django_q.status import Stat
from django_q.worker import worker

from agents.models import AgentLease
from cindy_site.clock import now
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.services.nodes import brain_nodes_release
from engine.apps import preload_task_modules
from engine.health import (
    beat_interval,
    host_name,
    pid_alive,
    process_beat,
    processes_forget_gone,
    redis_problem,
)
from engine.lifeline import die_with_parent_hook
from engine.models import ProcessHeartbeat
from engine.retention import HOUSEKEEPING_BUDGET_SECONDS, retention_run
from engine.task_deaths import task_runs_release
from llm.usage import (
    brain_nodes_release_unstarted,
    llm_calls_interrupt,
    llm_calls_interrupt_gone,
    llm_calls_mark_interrupted,
)

logger = logging.getLogger("engine.workers")
Kind = ActivityEvent.Kind

#: Worker timer values django-q2 uses: idle, recycled (exited after RECYCLE tasks), timed out.
IDLE, RECYCLED, TIMED_OUT = -1, -2, 0
#: How often the sentinel runs the schedule and closes LLM calls interrupted by a killed worker.
HOUSEKEEPING_SECONDS = 30.0
#: How long a killed pool process may take to be reaped before the new pool starts anyway.
JOIN_SECONDS = 5.0
#: While no worker is busy, the longest the guard sleeps between two rounds (it wakes at once when a
#: pool process dies); 1 s when the pool's status is shared (Redis), whose entry lives 3 s.
IDLE_GUARD_SECONDS = 5.0
SHARED_STATUS_GUARD_SECONDS = 1.0


def pool_connections_persistent() -> None:
    """Every process of the pool keeps its database connection between tasks (CONN_MAX_AGE=None).

    django-q2 closes "old" connections before each task a worker runs, each time the pusher reads the
    queue and before the monitor stores a result: with CONN_MAX_AGE=0 each of those opened a fresh
    connection (on SQLite, about 1.5 ms of CPU with its PRAGMAs), several per task. A kept connection
    is still closed after an error that left it unusable, and with CONN_HEALTH_CHECKS (MariaDB) it is
    pinged before its first use in each task. The sentinel closes every connection before it forks,
    so no process shares one.
    """
    for alias in db.connections:
        db.connections.settings[alias]["CONN_MAX_AGE"] = None


def _run_with_lifeline(hook: Any, target: Any, *args: Any) -> None:
    if hook is not None:
        hook()
    target(*args)


class GuardedSentinel(Sentinel):
    """django-q2's sentinel, run in this process, that replaces the whole pool after a sudden death."""

    def __init__(self, *, gateway_id: str = "") -> None:
        self.gateway_id = gateway_id
        self.replacements = 0
        self._housekeeping_at: float | None = None  # monotonic; None: run it on the first guard cycle
        self._beat_at: float | None = None  # monotonic; None: write the health row on the first cycle
        self._counted_at: float | None = None  # monotonic: when busy workers' timeouts were last counted
        self.health_name = f"workers:{host_name()}:{os.getpid()}"
        super().__init__(Event(), Event(), uuid.uuid4(), start=False)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._kill_and_exit)

    def start(self) -> None:
        pool_connections_persistent()
        try:
            gone = processes_forget_gone(kind=ProcessHeartbeat.Kind.WORKERS)
            if gone:
                logger.info(
                    "removed the health rows of worker pools gone from this host: %s", ", ".join(gone)
                )
        except Exception:
            logger.exception("could not tidy the health rows")
        finally:
            db.connections.close_all()
        if settings.CINDY_PRELOAD_TASK_MODULES:
            modules = preload_task_modules()
            logger.info("task workers preloaded the LLM stack (%s)", ", ".join(modules) or "no provider")
        super().start()

    # --- processes ---------------------------------------------------------------------------------

    def spawn_process(self, target, *args) -> Process:
        """As django-q2 does, but each process gets SIGKILL when this sentinel dies."""
        hook = die_with_parent_hook()
        process = get_mp_context().Process(
            target=_run_with_lifeline, args=(hook, target, *args), name=f"Process-{uuid.uuid4().hex}"
        )
        process.daemon = True
        if target == worker:
            process.daemon = Conf.DAEMONIZE_WORKERS
            process.timer = args[2]
            self.pool.append(process)
        process.start()
        return process

    def spawn_worker(self) -> None:
        self.spawn_process(worker, self.task_queue, self.result_queue, Value("f", IDLE), self.timeout)

    def _children(self) -> list[Process]:
        return [p for p in (*self.pool, self.pusher, self.monitor) if p is not None]

    def _kill_and_exit(self, signum: int, frame: Any) -> None:
        """SIGTERM/SIGINT: kill the pool and exit now. Idempotent, takes no lock, never waits."""
        for process in self._children():
            if process.pid is not None:
                with contextlib.suppress(OSError):
                    os.kill(process.pid, signal.SIGKILL)
        os._exit(0)

    # --- guarding ----------------------------------------------------------------------------------

    @staticmethod
    def _timer(process: Process) -> float:
        """The worker's state without its lock: a worker may have died holding that lock."""
        return process.timer.get_obj().value

    def sudden_death(self) -> str:
        """What died in a way that may have left a queue lock held, or '' if nothing did."""
        for process, role in ((self.pusher, "pusher"), (self.monitor, "monitor")):
            if not process.is_alive():
                return f"the task {role} (pid {process.pid}) died"
        for process in self.pool:
            if not process.is_alive() and self._timer(process) not in (RECYCLED, TIMED_OUT):
                if self.died_in_task(process):
                    continue  # it held no queue lock: `tend_workers` respawns it alone
                state = "idle" if self._timer(process) == IDLE else "busy"
                return f"{state} task worker pid {process.pid} died (exit status {process.exitcode})"
        return ""

    def tend_workers(self, cycle: float) -> None:
        """django-q2's own worker care: respawn recycled and timed-out workers, count busy time down.

        A worker found dead otherwise died after this round's `sudden_death` look: it is left for the
        next round's (its sentinel ends the guard's wait at once), which replaces the pool, as any
        other sudden death; respawning it alone here would leave the queues' locks as it left them."""
        for process in list(self.pool):
            timer = self._timer(process)
            if not process.is_alive():
                if timer in (RECYCLED, TIMED_OUT):
                    self.reincarnate(process)
                elif self.died_in_task(process):
                    self.task_death(process)
                continue
            if timer == TIMED_OUT:
                self.reincarnate(process)
                continue
            lock = process.timer.get_lock()
            if lock.acquire(timeout=1):  # a worker that died holding it is caught next cycle
                try:
                    if process.timer.get_obj().value > 0:
                        process.timer.get_obj().value -= cycle
                finally:
                    lock.release()

    def countdown(self, at: float, cycle: float) -> float:
        """How much to count busy workers' timeouts down by in the round at `at` (monotonic): the time
        since the last round's count, at most one cycle. A round comes sooner than a cycle when a pool
        process dies (its sentinel wakes the guard at once); counting a whole cycle each round, as
        django-q2 does, would then time a busy worker out long before its timeout (a few hundred
        quick rounds eat CINDY_Q_TIMEOUT), and the guard would kill it as timed out."""
        last, self._counted_at = self._counted_at, at
        return cycle if last is None else max(0.0, min(cycle, at - last))

    @staticmethod
    def died_in_task(process: Process) -> bool:
        """A dead worker that was running its task's own code: busy (its timer counts down) and not
        holding its timer's lock, which it takes only to put its result on the shared result queue. It
        took its task off the task queue before, so it held none of the queues' locks: the pool is
        sound and only this worker is replaced."""
        if process.is_alive() or (process.timer.get_obj().value or 0) <= 0:
            return False
        lock = process.timer.get_lock()
        if not lock.acquire(block=False):
            return False
        lock.release()
        return True

    def task_death(self, process: Process) -> None:
        """Respawn a worker killed by its task, close its LLM calls and re-queue its planning at once
        (its next run counts the death: engine/task_deaths.py). The rest of the pool runs on."""
        logger.error(
            "task worker pid %s died running a task (exit status %s); replacing that worker only",
            process.pid,
            process.exitcode,
        )
        try:
            if process.pid is not None:
                # The death is counted before the calls are closed: a closed (interrupted) call is
                # what the gateway's watchdog re-queues on, and its release would lose the count.
                released, failed = task_runs_release(pid=process.pid)
                llm_calls_interrupt(pids=[process.pid])
                logger.warning(
                    "planning of worker pid %s: %s node(s) queued again, %s failed (CINDY_TASK_MAX_DEATHS)",
                    process.pid,
                    released,
                    failed,
                )
        except Exception:  # the watchdog re-queues them once the database answers
            logger.exception("could not re-queue the planning of task worker pid %s", process.pid)
        finally:
            db.connections.close_all()
        self.reincarnate(process)

    def replace_pool(self, reason: str) -> None:
        """Kill every pool process, start a fresh pool on new queues, and re-plan what was lost."""
        logger.critical("%s: the task queues may be locked; replacing all task workers", reason)
        agents = self._agents()
        self._announce(agents, Kind.AGENT_ERROR, f"planning stalled: {reason}; replacing the task workers")
        children = self._children()
        for process in children:
            with contextlib.suppress(OSError):
                process.kill()
        for process in children:
            process.join(JOIN_SECONDS)
        self.task_queue = Queue(maxsize=Conf.QUEUE_LIMIT) if Conf.QUEUE_LIMIT else Queue()
        self.result_queue = Queue()
        self.event_out = Event()
        released = 0
        try:
            # Every process of the pool is dead: their calls in flight never finish. Closing them now
            # lets the gateway's watchdog re-run their planning at once, in any layout.
            llm_calls_interrupt(pids=[p.pid for p in children if p.pid is not None])
        except Exception:  # the housekeeping closes them after CINDY_Q_TIMEOUT instead
            logger.exception("could not close the LLM calls of the replaced task workers")
        try:
            if self.gateway_id:
                released = brain_nodes_release(
                    gateway_id=self.gateway_id, reason=f"task workers replaced: {reason}"
                )
            else:
                released = brain_nodes_release_unstarted(reason=f"task workers replaced: {reason}")
        except Exception:  # the gateway's watchdog re-queues them once the database answers
            logger.exception("could not return the lost planning nodes to pending")
        self.spawn_cluster()
        self.replacements += 1
        self.reincarnations += 1
        self._announce(
            agents,
            Kind.INFO,
            f"task workers replaced; planning resumed ({released} planning node(s) queued again)",
        )

    def _agents(self) -> list[int]:
        if not self.gateway_id:
            return []
        return list(AgentLease.objects.filter(holder=self.gateway_id).values_list("agent_id", flat=True))

    def _announce(self, agents: list[int], kind: str, summary: str) -> None:
        """An event for each agent the outage touches (one without an agent when none is known)."""
        try:
            for agent_id in agents or [None]:
                record_event(kind, agent_id=agent_id, summary=summary, data={"workers": os.getpid()})
        except Exception:  # the database being away must not stop the repair
            logger.exception("could not record the task worker outage")
        finally:
            db.connections.close_all()

    def housekeeping(self) -> None:
        if Conf.SCHEDULER:
            scheduler(broker=self.broker)
        try:
            cutoff = now() - dt.timedelta(seconds=settings.Q_CLUSTER["timeout"])
            llm_calls_mark_interrupted(started_before=cutoff)
            llm_calls_interrupt_gone(alive=pid_alive)  # a pool before this one's, e.g. after our restart
        except Exception:
            logger.exception("could not close interrupted LLM calls")
        try:
            report = retention_run(budget_seconds=HOUSEKEEPING_BUDGET_SECONDS)
            if report.batches:
                logger.info("pruned old rows: %s", report.describe())
        except Exception:
            logger.exception("could not prune old rows")
        finally:
            db.connections.close_all()

    def beat(self) -> None:
        """Write this pool's health row (engine/health.py); a row going stale is how health sees it gone."""
        try:
            process_beat(
                name=self.health_name,
                kind=ProcessHeartbeat.Kind.WORKERS,
                serves=self.gateway_id,
                workers=sum(1 for p in self.pool if p.is_alive()),
                problem=redis_problem(),
            )
        except Exception:
            logger.exception("could not write the task workers' health row")
        finally:
            db.connections.close_all()

    def status_shared(self) -> bool:
        """Whether the pool's django-q2 status reaches other processes (`qinfo`, `qmonitor`): the Redis
        broker keeps it in Redis; the database broker in the Django cache, which here is each
        process's own memory, where no other process can read it."""
        return type(self.broker).set_stat is not Broker.set_stat or not isinstance(
            self.broker.cache, (LocMemCache, type(None))
        )

    def guard_pause(self, cycle: float) -> float:
        """How long to sleep before the next round: one cycle while a worker is busy (its timeout is
        counted down each cycle, as django-q2 does), else until the housekeeping or the health row is
        due, at most IDLE_GUARD_SECONDS (SHARED_STATUS_GUARD_SECONDS while the status is shared). A
        worker that starts a task meanwhile is counted down from the next round: its timeout comes that
        much later, and it stops itself at CINDY_Q_TIMEOUT anyway."""
        if any(self._timer(process) > 0 for process in self.pool):
            return cycle
        at = time.monotonic()
        longest = SHARED_STATUS_GUARD_SECONDS if self._status_shared else IDLE_GUARD_SECONDS
        due = [self._housekeeping_at + HOUSEKEEPING_SECONDS - at]
        if self._beat_at is not None:
            due.append(self._beat_at + beat_interval() - at)
        return max(cycle, min(longest, *due))

    def guard(self) -> None:
        logger.info("task workers running (pid %s, %s workers)", os.getpid(), self.pool_size)
        self.start_event.set()
        self._status_shared = self.status_shared()
        Stat(self).save()
        cycle = Conf.GUARD_CYCLE
        while not self.stop_event.is_set():
            reason = self.sudden_death()
            if reason:
                self.replace_pool(reason)
            else:
                self.tend_workers(self.countdown(time.monotonic(), cycle))
            if (
                self._housekeeping_at is None
                or time.monotonic() - self._housekeeping_at >= HOUSEKEEPING_SECONDS
            ):
                self._housekeeping_at = time.monotonic()
                self.housekeeping()
            if self._beat_at is None or time.monotonic() - self._beat_at >= beat_interval():
                self._beat_at = time.monotonic()
                self.beat()
            if self._status_shared:
                Stat(self).save()
            # Woken at once by the death of any pool process (its sentinel becomes readable).
            wait([process.sentinel for process in self._children()], self.guard_pause(cycle))
