"""The gateway reads the global parameters an operator stored at the start of each pass: a read delay
changed in the admin applies to the messages of the next pass, without a restart."""

from __future__ import annotations

import datetime as dt

import pytest
from asgiref.sync import async_to_sync

from cindy_site.parameters import parameter
from conversations.models import Message, TaskNode
from engine.tests.harness import Harness
from llm.models import SiteParameter
from sandbox.services.chats import sandbox_say

# Whole passes: the gateway checks its database connections as in production (outside a transaction).
pytestmark = pytest.mark.django_db(transaction=True)


def test_a_read_delay_stored_in_the_admin_applies_from_the_next_pass(agent, clock, fake_llm, settings):
    settings.CINDY_READ_DELAY_SECONDS = 3
    harness = Harness(clock)
    harness.start()
    async_to_sync(harness.gateway.run_once)()
    # Written as the web process writes it: this process is told nothing.
    SiteParameter.objects.create(name="CINDY_READ_DELAY_SECONDS", value="7", updated=clock.now())
    assert parameter("CINDY_READ_DELAY_SECONDS") == 3
    sandbox_say(agent=agent, text="hello")

    async_to_sync(harness.gateway.run_once)()  # reads the parameters, then ingests the message

    node = TaskNode.objects.get(kind="received")
    assert node.not_before == Message.objects.get(text="hello").date + dt.timedelta(seconds=7)
    assert parameter("CINDY_READ_DELAY_SECONDS") == 7.0
