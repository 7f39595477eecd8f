"""Retention: old rows go in batches, LLM calls live on as daily totals, the cost chart is unchanged."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.management import call_command

from conversations.models import ActivityEvent, TaskGraph, TaskNode
from conversations.services.activity import record_event
from engine.retention import prune_counts, retention_run
from engine.tests.harness import tasks
from llm.costs import daily_costs
from llm.models import LLMCall, LLMUsageDaily
from sandbox.models import SandboxUpdate
from sandbox.services.chats import sandbox_say

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def periods(settings):
    settings.CINDY_RETAIN_ACTIVITY_DAYS = 30
    settings.CINDY_RETAIN_LLM_CALLS_DAYS = 3
    settings.CINDY_RETAIN_SANDBOX_UPDATES_DAYS = 7
    settings.CINDY_RETAIN_GRAPHS_DAYS = 10
    settings.CINDY_PRUNE_BATCH = 4
    settings.TIME_ZONE = "Europe/Paris"


def _call(agent, created, cost, *, model="gemini-3-flash", status=LLMCall.Status.OK, tokens=10):
    return LLMCall.objects.create(
        created=created,
        agent=agent,
        provider="gemini",
        model=model,
        input_tokens=tokens,
        output_tokens=1,
        cost=Decimal(cost),
        status=status,
    )


def test_activity_older_than_its_period_goes_in_batches_and_newer_stays(agent, clock):
    for _ in range(10):
        record_event(ActivityEvent.Kind.INFO, agent_id=agent.pk, summary="old")
    clock.advance(31 * 86400)
    record_event(ActivityEvent.Kind.INFO, agent_id=agent.pk, summary="new")
    assert prune_counts()["activity"] == 10
    batches = []
    report = retention_run(on_batch=lambda kind, n, took: batches.append((kind, n)))
    assert batches == [("activity", 4), ("activity", 4), ("activity", 2)]
    assert report.deleted["activity"] == 10 and report.batches == 3
    assert list(ActivityEvent.objects.values_list("summary", flat=True)) == ["new"]


def test_pruned_llm_calls_become_daily_totals_and_the_cost_chart_is_unchanged(agent, other_agent, clock):
    start = clock.now()
    for day in range(6):
        at = start + dt.timedelta(days=day)
        _call(agent, at, "0.10")
        _call(agent, at + dt.timedelta(hours=1), "0.05", model="gemini-3-pro")
        _call(other_agent, at + dt.timedelta(hours=23), "0.20")  # past midnight in Paris: the next day
    _call(agent, start, "0", status=LLMCall.Status.PENDING)
    clock.advance(6 * 86400)
    before = daily_costs()
    report = retention_run()
    assert report.deleted["llm_calls"] == 9  # three days of three calls; the pending call stays
    assert LLMCall.objects.filter(status=LLMCall.Status.PENDING).count() == 1
    assert daily_costs() == before
    wendy = LLMUsageDaily.objects.filter(agent=agent, model="gemini-3-flash").order_by("day")
    assert [(row.calls, row.cost, row.input_tokens) for row in wendy] == [(1, Decimal("0.10"), 10)] * 3


def test_calls_without_an_agent_pruned_in_two_batches_add_up_in_one_daily_row(clock):
    for _ in range(6):  # CINDY_PRUNE_BATCH is 4: the second batch adds to the first one's row
        _call(None, clock.now(), "0.01")
    clock.advance(6 * 86400)
    assert retention_run().deleted["llm_calls"] == 6
    row = LLMUsageDaily.objects.get()
    assert (row.agent_id, row.calls, row.cost, row.input_tokens) == (None, 6, Decimal("0.06"), 60)


def test_finished_graphs_go_with_their_nodes_and_active_ones_stay(agent, harness, fake_llm, clock):
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hi!"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    assert TaskGraph.objects.get().status == TaskGraph.Status.DONE and TaskNode.objects.count() == 2
    clock.advance(11 * 86400)
    sandbox_say(agent=agent, text="again")
    harness.ingest()
    active = TaskGraph.objects.get(status=TaskGraph.Status.ACTIVE)
    updates = SandboxUpdate.objects.count()
    report = retention_run()
    assert report.deleted["graphs"] == 1
    assert list(TaskGraph.objects.all()) == [active] and set(
        TaskNode.objects.values_list("graph", flat=True)
    ) == {active.pk}
    assert report.deleted["sandbox_updates"] == updates - SandboxUpdate.objects.count() > 0
    assert SandboxUpdate.objects.filter(created__lt=clock.now() - dt.timedelta(days=7)).count() == 0


def test_a_period_of_zero_keeps_a_kind_for_good(agent, clock, settings):
    settings.CINDY_RETAIN_ACTIVITY_DAYS = 0
    record_event(ActivityEvent.Kind.INFO, agent_id=agent.pk, summary="kept")
    clock.advance(365 * 86400)
    assert "activity" not in prune_counts()
    retention_run()
    assert ActivityEvent.objects.count() == 1


def test_prune_dry_run_reports_and_deletes_nothing(agent, clock, capsys):
    record_event(ActivityEvent.Kind.INFO, agent_id=agent.pk, summary="old")
    clock.advance(31 * 86400)
    call_command("prune", "--dry-run")
    assert "activity: 1 row(s) before" in capsys.readouterr().out
    assert ActivityEvent.objects.count() == 1
    call_command("prune")
    assert "deleted activity 1" in capsys.readouterr().out and ActivityEvent.objects.count() == 0
