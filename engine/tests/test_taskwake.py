"""Idle task workers sleep until a task is queued (engine/taskwake.py): the database broker's pusher
waits on its socket instead of polling, and every writer of a task wakes it once the row is committed."""

from __future__ import annotations

import datetime as dt
import shutil
import socket
import tempfile

import pytest
from django.test import TestCase
from django_q.brokers import get_broker
from django_q.models import OrmQ
from django_q.signing import SignedPackage

from engine.dispatch import enqueue_received, enqueue_received_many
from engine.taskwake import TaskBroker, TaskWakeListener, task_wake_dir, task_workers_wake

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def private_tmp(monkeypatch):
    """Sockets of this test only (other test runs on the machine share the database name), in a
    short directory (a socket's path is at most 107 bytes)."""
    short = tempfile.mkdtemp(prefix="cw", dir="/tmp")
    monkeypatch.setattr(tempfile, "tempdir", short)
    yield
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def listener():
    made = TaskWakeListener()
    yield made
    made.close()


def test_without_redis_the_pool_uses_the_waking_broker():
    assert isinstance(get_broker(), TaskBroker)


def test_a_queued_task_wakes_the_idle_pusher_once_committed(listener):
    assert listener.wait(0) is False
    with TestCase.captureOnCommitCallbacks(execute=False) as callbacks:
        enqueue_received(7, "gw#a")
    assert listener.wait(0) is False  # not before the row is committed
    for callback in callbacks:
        callback()
    assert listener.wait(0) is True
    assert listener.wait(0) is False  # consumed


def test_the_gateways_batched_dispatch_wakes_it_too(listener):
    with TestCase.captureOnCommitCallbacks(execute=True):
        enqueue_received_many([(8, "gw#b"), (9, "gw#c")])
    assert listener.wait(0) is True
    assert OrmQ.objects.count() == 2


def test_with_nothing_queued_the_pusher_waits_for_the_idle_time_not_the_poll(listener, settings, monkeypatch):
    """One read, then one wait of CINDY_Q_IDLE_SECONDS (which a wake-up ends): no 50 ms poll."""
    settings.CINDY_Q_IDLE_SECONDS = 7.0
    broker = TaskBroker(list_key="cindy")
    waits = []
    monkeypatch.setattr(TaskWakeListener, "wait", lambda self, timeout: waits.append(timeout) or False)
    assert broker.dequeue() is None
    assert waits == [7.0]

    monkeypatch.undo()
    settings.CINDY_Q_IDLE_SECONDS = 7.0
    enqueue_received(5, "gw#d")  # outside a transaction the wake-up is sent at once
    taken = broker.dequeue()
    assert [SignedPackage.loads(payload)["args"] for _, payload in taken] == [(5, "gw#d")]


def test_with_wake_ups_off_the_pusher_polls_as_before(settings, monkeypatch):
    settings.CINDY_WAKE = False
    slept = []
    monkeypatch.setattr("django_q.brokers.orm.sleep", slept.append)
    assert TaskBroker(list_key="cindy").dequeue() is None
    assert slept == [settings.Q_CLUSTER["poll"]]
    assert not task_wake_dir().exists() or not list(task_wake_dir().glob("*.sock"))


def test_a_socket_left_by_a_killed_pool_is_removed_by_the_next_writer(listener):
    gone = task_wake_dir() / "999999.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(gone))
    dead.close()  # the file stays, nobody listens

    assert task_workers_wake() == 1
    assert not gone.exists()
    assert listener.wait(0) is True


def test_a_due_task_is_taken_once_and_a_task_another_pusher_moved_is_left(settings):
    """`tasks_take`: the plain-SQL read and compare-and-set of `ORM.dequeue`."""
    from django.utils import timezone

    from engine.taskwake import tasks_take

    at = timezone.now()
    due = OrmQ.objects.create(key="cindy", payload="a", lock=at - dt.timedelta(seconds=5))
    later = OrmQ.objects.create(key="cindy", payload="b", lock=at + dt.timedelta(seconds=5))
    OrmQ.objects.create(key="other", payload="c", lock=at - dt.timedelta(seconds=5))
    until = at + dt.timedelta(seconds=settings.Q_CLUSTER["retry"])
    assert tasks_take(key="cindy", at=at, until=until) == [(due.pk, "a")]
    assert OrmQ.objects.get(pk=due.pk).lock == until
    assert tasks_take(key="cindy", at=at, until=until) is None  # locked until `until` now
    assert OrmQ.objects.get(pk=later.pk).lock == at + dt.timedelta(seconds=5)


def test_the_pusher_closes_a_stale_connection_before_it_reads(listener, monkeypatch):
    closed = []
    monkeypatch.setattr("django.db.close_old_connections", lambda: closed.append(True))
    monkeypatch.setattr(TaskWakeListener, "wait", lambda self, timeout: False)
    monkeypatch.setattr("django.db.transaction.get_autocommit", lambda using=None: True)
    broker = TaskBroker(list_key="cindy")
    closed.clear()  # building the broker closes one too
    assert broker.dequeue() is None
    assert closed == [True]
