"""The LLM accounting reads every planning call runs, in plain SQL (llm/selectors.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from engine.tests.cast import make_agent
from llm.models import LLMCall, ModelPrice
from llm.selectors import finished_call, prices_of_provider

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 4, 12, 0, tzinfo=dt.UTC)


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_a_finished_call_is_the_newest_ok_one_with_a_reply():
    agent = make_agent()
    common = {
        "agent": agent,
        "created": AT,
        "node_id": 5,
        "provider": "gemini",
        "model": "m",
        "fingerprint": "f",
    }
    LLMCall.objects.create(**common, status=LLMCall.Status.OK, reply="first", cost=Decimal("0.001500"))
    newest = LLMCall.objects.create(**common, status=LLMCall.Status.OK, reply="second", cost=Decimal("0.25"))
    LLMCall.objects.create(**common, status=LLMCall.Status.OK, reply="")
    LLMCall.objects.create(**common, status=LLMCall.Status.ERROR, reply="failed")
    found = finished_call(node_id=5, fingerprint="f")
    assert _values(found) == _values(LLMCall.objects.get(pk=newest.pk))
    assert str(found.cost) == str(LLMCall.objects.get(pk=newest.pk).cost)
    assert (
        finished_call(node_id=5, fingerprint="g") is None
        and finished_call(node_id=6, fingerprint="f") is None
    )


def test_a_providers_prices_are_its_rows_oldest_first_with_their_decimals():
    ModelPrice.objects.all().delete()
    rows = [
        ModelPrice.objects.create(
            provider="p",
            model_prefix=prefix,
            input_per_million=Decimal("0.15"),
            output_per_million=Decimal("2.5"),
        )
        for prefix in ("m-", "m-pro")
    ]
    ModelPrice.objects.create(provider="q", model_prefix="x", input_per_million=1, output_per_million=1)
    found = prices_of_provider(provider="p")
    assert [p.pk for p in found] == [r.pk for r in rows]
    expected = [_values(p) for p in ModelPrice.objects.filter(provider="p").order_by("pk")]
    assert [_values(p) for p in found] == expected
    assert [str(p.input_per_million) for p in found] == [str(e["input_per_million"]) for e in expected]
