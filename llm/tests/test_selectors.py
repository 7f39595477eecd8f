"""The LLM accounting reads every planning call runs, in plain SQL (llm/selectors.py)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from engine.tests.cast import make_agent
from llm.models import LLMCall, LLMEndpoint, ModelPrice, SiteParameter
from llm.selectors import enabled_endpoints, finished_call, prices_matching, stored_parameters

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


def test_the_prices_matching_a_model_are_the_providers_rows_whose_prefix_it_starts_with_longest_first():
    ModelPrice.objects.all().delete()
    rows = {
        prefix: ModelPrice.objects.create(
            provider="p",
            model_prefix=prefix,
            input_per_million=Decimal("0.15"),
            output_per_million=Decimal("2.5"),
        )
        for prefix in ("m-", "m-pro", "m-pro-2", "m_", "")
    }
    ModelPrice.objects.create(provider="q", model_prefix="m-pro", input_per_million=1, output_per_million=1)
    found = prices_matching(provider="p", model="m-pro-1")
    by_pk = {p.pk: p for p in ModelPrice.objects.filter(provider="p")}
    assert [p.model_prefix for p in found] == ["m-pro", "m-", ""]
    assert [_values(p) for p in found] == [_values(by_pk[p.pk]) for p in found]
    assert str(found[0].input_per_million) == str(by_pk[found[0].pk].input_per_million) == "0.1500"
    assert rows["m-pro-2"].pk not in {p.pk for p in found}


def test_the_price_of_a_model_is_its_longest_prefix_case_and_wildcards_included():
    from llm.usage import price_for

    ModelPrice.objects.all().delete()
    for prefix in ("gemini-", "Gemini-3", "gemini_3", "gemini-3%"):
        ModelPrice.objects.create(
            provider="gemini", model_prefix=prefix, input_per_million=1, output_per_million=1
        )
    assert price_for("gemini", "gemini-3-flash").model_prefix == "gemini-"
    assert price_for("gemini", "Gemini-3-flash").model_prefix == "Gemini-3"
    assert price_for("gemini", "gemini-3%x").model_prefix == "gemini-3%"
    assert price_for("gemini", "other") is None


def test_the_enabled_endpoints_are_read_by_name_and_a_disabled_one_is_left_out():
    LLMEndpoint.objects.create(name="zeta", base_url="http://z.example/v1", api_key="kz", structured="off")
    LLMEndpoint.objects.create(name="alpha", base_url="http://a.example/v1")
    LLMEndpoint.objects.create(name="off", base_url="http://o.example/v1", enabled=False)
    assert enabled_endpoints() == [
        ("alpha", "http://a.example/v1", "", "auto"),
        ("zeta", "http://z.example/v1", "kz", "off"),
    ]


def test_the_stored_parameters_are_each_name_with_its_text():
    assert stored_parameters() == {}
    SiteParameter.objects.create(name="CINDY_HISTORY_SIZE", value="80", updated=AT)
    SiteParameter.objects.create(name="MEDIA_MODEL", value="gemini", updated=AT)
    assert stored_parameters() == {"CINDY_HISTORY_SIZE": "80", "MEDIA_MODEL": "gemini"}
