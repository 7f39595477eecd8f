"""What the task pool costs while nothing happens (engine/cluster.py): the guard sleeps until something
is due instead of every guard cycle, and writes django-q2's status only where another process reads it."""

from __future__ import annotations

import signal
import threading
import time
from multiprocessing import Value

import pytest
from django_q.cluster import get_mp_context
from django_q.conf import Conf
from django_q.worker import worker

from engine.cluster import (
    HOUSEKEEPING_SECONDS,
    IDLE,
    IDLE_GUARD_SECONDS,
    RECYCLED,
    SHARED_STATUS_GUARD_SECONDS,
    TIMED_OUT,
    GuardedSentinel,
)
from engine.health import beat_interval


@pytest.fixture
def sentinel(db):
    """A sentinel of the database broker, not started: its signal handlers are put back afterwards."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    made = GuardedSentinel()
    yield made
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def _workers(sentinel: GuardedSentinel, *timers: float) -> None:
    """Pool entries as django-q2 makes them (a worker process and its timer), never started."""
    sentinel.pool = []
    for timer in timers:
        entry = get_mp_context().Process(target=worker)
        entry.timer = Value("f", timer)
        sentinel.pool.append(entry)


def test_the_database_broker_s_status_stays_in_its_own_process_so_the_guard_does_not_write_it(sentinel):
    assert sentinel.status_shared() is False


def test_an_idle_pool_s_guard_sleeps_until_its_health_row_is_due_at_most_the_idle_pause(sentinel):
    _workers(sentinel, IDLE, IDLE)
    sentinel._status_shared = False
    at = time.monotonic()
    sentinel._housekeeping_at = at
    sentinel._beat_at = at - beat_interval() + 2.0  # the health row is due in 2 s
    assert 1.5 < sentinel.guard_pause(Conf.GUARD_CYCLE) <= 2.0
    sentinel._beat_at = at  # nothing due for a while: the longest pause
    assert sentinel.guard_pause(Conf.GUARD_CYCLE) == IDLE_GUARD_SECONDS
    sentinel._housekeeping_at = at - HOUSEKEEPING_SECONDS  # overdue: one cycle, not less
    assert sentinel.guard_pause(Conf.GUARD_CYCLE) == Conf.GUARD_CYCLE


def test_a_busy_worker_s_timeout_is_counted_down_every_cycle(sentinel):
    _workers(sentinel, IDLE, 120.0)
    sentinel._status_shared = False
    sentinel._housekeeping_at = sentinel._beat_at = time.monotonic()
    assert sentinel.guard_pause(Conf.GUARD_CYCLE) == Conf.GUARD_CYCLE


class _BusyWorker:
    """A live pool entry in the middle of a task (its timer counting down)."""

    def __init__(self, timer: float) -> None:
        self.timer = Value("f", timer)

    def is_alive(self) -> bool:
        return True


def test_a_busy_worker_s_timeout_runs_in_real_time_however_often_the_guard_wakes(sentinel):
    """Rounds a few milliseconds apart (pool processes dying wake the guard at once) count only the
    time that passed, never a whole cycle each: the busy worker is not timed out early."""
    busy = _BusyWorker(306.0)  # CINDY_Q_TIMEOUT 300 and django-q2's 3 s buffer, 3 s of it gone
    sentinel.pool = [busy]
    timed_out = []
    sentinel.reincarnate = timed_out.append
    at = 1000.0
    assert sentinel.countdown(at, Conf.GUARD_CYCLE) == Conf.GUARD_CYCLE  # the first round: one cycle
    for _ in range(1000):  # one second of rounds 1 ms apart: at a cycle each they would eat 500 s
        at += 0.001
        sentinel.tend_workers(sentinel.countdown(at, Conf.GUARD_CYCLE))
    assert timed_out == []
    assert busy.timer.value == pytest.approx(305.0, abs=0.01)
    # A long wait (an idle pool's pause) counts as one cycle: a task started meanwhile is counted
    # from the round after it started, as before.
    assert sentinel.countdown(at + 30.0, Conf.GUARD_CYCLE) == Conf.GUARD_CYCLE


def test_with_a_shared_status_the_guard_writes_it_before_its_entry_expires(sentinel):
    _workers(sentinel, IDLE)
    sentinel._status_shared = True
    sentinel._housekeeping_at = sentinel._beat_at = time.monotonic()
    assert sentinel.guard_pause(Conf.GUARD_CYCLE) == SHARED_STATUS_GUARD_SECONDS


def test_the_redis_broker_s_status_is_shared_so_the_guard_keeps_writing_it(sentinel, monkeypatch):
    from django_q.brokers.redis_broker import Redis

    monkeypatch.setattr(Conf, "REDIS", "redis://127.0.0.1:6379/15")  # a client only: nothing is sent
    sentinel.broker = Redis(list_key=sentinel.broker.list_key)
    assert sentinel.status_shared() is True


class _Alive:
    pid = 1

    def is_alive(self) -> bool:
        return True


def test_a_worker_that_died_between_the_death_check_and_the_tending_is_left_for_the_pool_replacement(
    sentinel,
):
    """Recycled and timed-out workers are respawned one by one, and so is a busy worker that died in
    its task's code (it held no queue lock); a worker that died otherwise (here after the round's
    `sudden_death` look) is left to the next round's, which replaces the pool."""
    _workers(sentinel, IDLE, RECYCLED, TIMED_OUT, 30.0, 30.0)  # none started: each is a dead worker
    idle, recycled, timed_out, busy, putting = sentinel.pool
    respawned = []
    sentinel.reincarnate = respawned.append
    sentinel.pusher = sentinel.monitor = _Alive()
    # Died putting its result on the shared result queue, its timer's lock held (by another thread
    # here: the lock is re-entrant for its holder, and another process in the pool).
    holder = threading.Thread(target=putting.timer.get_lock().acquire)
    holder.start()
    holder.join()

    sentinel.tend_workers(Conf.GUARD_CYCLE)

    assert respawned == [recycled, timed_out, busy]
    assert "idle task worker" in sentinel.sudden_death()
    sentinel.pool = [busy]
    assert sentinel.sudden_death() == ""  # died in its task: not a reason to replace the pool
    sentinel.pool = [putting]
    assert "busy task worker" in sentinel.sudden_death()
