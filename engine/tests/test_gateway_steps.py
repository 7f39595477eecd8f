"""The gateway's layout (docs/gateway.md): a thin loop over step objects that share one context and
keep their own state to themselves."""

from __future__ import annotations

import inspect

from engine.gateway import Gateway
from engine.wake import DbWake

FULL_PASS = [
    "leases",
    "workers",
    "connect",
    "ingest",
    "media",
    "events",
    "schedules",
    "consolidation",
    "tick",
    "presence",
    "reap_requests",
    "requests",
    "signin",
    "stickers",
    "library",
    "dialogs",
    "attention",
]


def test_a_full_pass_runs_the_steps_in_the_documented_order():
    gateway = Gateway(gateway_id="gw-layout")
    assert [step.name for step in gateway.all_steps()] == FULL_PASS == list(gateway.steps)


def test_every_step_shares_the_gateway_s_one_context():
    gateway = Gateway(gateway_id="gw-layout")
    for step in gateway.all_steps():
        assert step.context is gateway.context, step.name
        assert inspect.iscoroutinefunction(step.run), step.name


def test_no_step_holds_another_step_except_the_tick_s_media_download_before_dispatch():
    gateway = Gateway(gateway_id="gw-layout")
    steps = {id(step): step.name for step in gateway.all_steps()}
    links = []
    for step in gateway.all_steps():
        for attribute, value in vars(step).items():
            held = getattr(value, "__self__", value)  # a bound method holds its object
            if id(held) in steps and held is not step:
                links.append((step.name, attribute, steps[id(held)]))
    assert links == [("tick", "before_dispatch", "media")]


def test_a_follow_up_pass_looks_for_media_only_after_messages_came():
    gateway = Gateway(gateway_id="gw-layout")
    assert [step.name for step in gateway.follow_up_steps()] == ["ingest", "tick", "presence"]
    gateway.steps["ingest"].ingested = True
    assert [step.name for step in gateway.follow_up_steps()] == ["ingest", "media", "tick", "presence"]


def test_a_pass_is_settled_only_when_its_tick_did_nothing_but_hand_turns_to_the_workers():
    gateway = Gateway(gateway_id="gw-settled", tick_seconds=1)
    tick = gateway.steps["tick"]
    tick.only_planned = True
    gateway.context.wake = None
    assert not gateway._settled(["ingest", "tick"])  # wake-ups off: the wait would not end for a message
    gateway.context.wake = DbWake(threaded=False, gateway_id=gateway.gateway_id)
    assert gateway._settled(["ingest", "tick"])
    assert gateway._settled(["tick"])
    assert not gateway._settled(["ingest"])  # a message stored, no turn handed yet: its media, its node
    assert not gateway._settled(["ingest", "tick", "requests"])  # another step's work may feed the tick
    tick.only_planned = False  # the tick ran an action or reaped a lease: the next node may be due
    assert not gateway._settled(["ingest", "tick"])
