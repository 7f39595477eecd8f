"""The daily spend cap keeps the precision people type (up to 6 decimals, as LLM costs are stored),
in the persona file, the admin's form and the export, or refuses with an error that says why."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.forms import modelform_factory

from agents.models import Agent
from agents.persona import parse_persona, write_persona
from engine.tests.cast import make_agent

PERSONA = "# Agent Name\nWendy\n\n# Agent Phone\n+15551234567\n\n# Spend Limits\nDaily Cap USD: {cap}\n\n# Agent Instructions\nBe kind.\n"


@pytest.mark.parametrize(("typed", "kept"), [("0.0042", "0.0042"), ("$0.000001", "0.000001"), ("3", "3.00")])
def test_a_persona_cap_keeps_the_decimals_it_was_written_with(typed, kept):
    persona = parse_persona(PERSONA.format(cap=typed), source="agents/Wendy.md")

    assert persona.warnings == []
    assert str(persona.daily_spend_cap) == kept
    assert f"Daily Cap USD: {kept}\n" in write_persona(persona)


def test_a_persona_cap_finer_than_a_millionth_is_ignored_with_a_warning_not_rounded():
    persona = parse_persona(PERSONA.format(cap="0.0000004"), source="agents/Wendy.md")

    assert persona.daily_spend_cap is None
    assert persona.warnings == [
        'agents/Wendy.md: "Spend Limits" line "Daily Cap USD: 0.0000004": more than 6 decimal places; '
        "ignored: write e.g. 5 or 0.0042"
    ]


@pytest.mark.django_db
def test_the_admin_form_stores_a_cap_below_a_cent_as_typed():
    agent = make_agent("Wendy")
    form = modelform_factory(Agent, fields=["daily_spend_cap"])({"daily_spend_cap": "0.0042"}, instance=agent)

    assert form.is_valid(), form.errors
    form.save()
    agent.refresh_from_db()
    assert agent.daily_spend_cap == Decimal("0.0042")


@pytest.mark.django_db
def test_the_admin_form_refuses_a_cap_finer_than_a_millionth_with_a_clear_error():
    form = modelform_factory(Agent, fields=["daily_spend_cap"])(
        {"daily_spend_cap": "0.0000004"}, instance=make_agent("Wendy")
    )

    assert not form.is_valid()
    assert form.errors["daily_spend_cap"] == ["Ensure that there are no more than 6 decimal places."]
