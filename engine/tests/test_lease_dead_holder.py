"""A gateway restarted after a crash: a lease held by a process on this host that no longer exists is
taken over at once; one held by a live process, or by another host, is waited for until it expires."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from agents.models import AgentLease
from engine.leases import holder_is_gone, lease_acquire

pytestmark = pytest.mark.django_db


@pytest.fixture
def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    return process.pid


@pytest.fixture
def live_pid():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait(timeout=30)


@pytest.fixture
def here(settings) -> str:
    settings.CINDY_GATEWAY_NAME = ""
    return socket.gethostname()


def test_a_lease_of_a_process_on_this_host_that_no_longer_exists_is_taken_over_at_once(
    agent, clock, settings, here, dead_pid
):
    settings.CINDY_LEASE_SECONDS = 30
    assert lease_acquire(agent=agent, holder=f"{here}:{dead_pid}:aaaaaa").acquired

    result = lease_acquire(agent=agent, holder=f"{here}:1:bbbbbb")

    assert result.acquired
    assert f"gateway {here}:{dead_pid}:aaaaaa" in result.message and "no longer exists" in result.message
    assert AgentLease.objects.get().holder == f"{here}:1:bbbbbb"


def test_a_lease_of_a_live_process_on_this_host_is_waited_for_until_it_expires(
    agent, clock, settings, here, live_pid
):
    settings.CINDY_LEASE_SECONDS = 30
    lease_acquire(agent=agent, holder=f"{here}:{live_pid}:aaaaaa")

    assert not lease_acquire(agent=agent, holder=f"{here}:1:bbbbbb").acquired
    clock.advance(31)
    assert lease_acquire(agent=agent, holder=f"{here}:1:bbbbbb").acquired


def test_a_lease_of_another_host_is_waited_for_whatever_its_pid(agent, clock, settings, here, dead_pid):
    settings.CINDY_LEASE_SECONDS = 30
    lease_acquire(agent=agent, holder=f"elsewhere-{here}:{dead_pid}:aaaaaa")

    assert not lease_acquire(agent=agent, holder=f"{here}:1:bbbbbb").acquired


def test_the_gateway_name_setting_names_this_host(settings, dead_pid, live_pid):
    settings.CINDY_GATEWAY_NAME = "gw-east:1"  # a colon in the name still parses

    assert holder_is_gone(f"gw-east:1:{dead_pid}:aaaaaa")
    assert not holder_is_gone(f"gw-east:1:{live_pid}:aaaaaa")
    assert not holder_is_gone(f"gw-west:{dead_pid}:aaaaaa")
    assert not holder_is_gone("gw-east:1:not-a-pid:aaaaaa")
    assert not holder_is_gone("phone:12")
