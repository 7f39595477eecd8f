"""The cached share and what caching saved, per agent and day, from the stored calls and the daily
totals retention leaves; and how the LLMs page and the dashboard show them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agents.models import Agent
from cindy_site.clock import now
from dashboard import selectors
from engine.retention import retention_run
from llm.cache_share import CacheShare, cache_shares, explicit_cache_savings
from llm.models import LLMCall
from llm.usage import price_for

FLASH = "gemini-2.5-flash"


@pytest.fixture
def utc(settings):
    settings.TIME_ZONE = "UTC"


def _call(
    agent,
    *,
    input_tokens,
    cached,
    explicit=False,
    purpose="plan",
    cost="0",
    model=FLASH,
    provider="gemini",
    written=0,
):
    return LLMCall.objects.create(
        created=now(),
        agent=agent,
        provider=provider,
        model=model,
        purpose=purpose,
        input_tokens=input_tokens,
        cached_tokens=cached,
        cache_write_tokens=written,
        explicit_cache=explicit,
        cost=Decimal(cost),
    )


def _discount(model: str, provider: str = "gemini") -> Decimal:
    price = price_for(provider, model)
    return (price.input_per_million - price.cached_input_per_million) / Decimal(1_000_000)


def test_the_share_and_the_saving_add_up_per_agent_and_day(agent, clock, utc):
    other = Agent.objects.create(name="Heidi", phone="+15550000002")
    _call(agent, input_tokens=1000, cached=600)
    _call(agent, input_tokens=3000, cached=0, model="gpt-4o", provider="openai")
    _call(other, input_tokens=500, cached=100)
    clock.advance(hours=24)
    _call(agent, input_tokens=2000, cached=1500, explicit=True)
    _call(agent, input_tokens=1000, cached=200)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.000100")

    rows = cache_shares(days=7)

    assert [(r.day, r.agent) for r in rows] == [
        (dt.date(2026, 1, 6), "Wendy"),
        (dt.date(2026, 1, 5), "Heidi"),
        (dt.date(2026, 1, 5), "Wendy"),
    ]
    today, _, yesterday = rows
    assert (yesterday.input_tokens, yesterday.cached_tokens, yesterday.share) == (4000, 600, 0.15)
    assert yesterday.saved == (600 * _discount(FLASH)).quantize(Decimal("0.000001"))
    assert (today.input_tokens, today.cached_tokens, today.explicit_cached_tokens) == (3000, 1700, 1500)
    assert today.as_row()["cached_share"] == "56.7 %"
    assert today.implicit_saved == (200 * _discount(FLASH)).quantize(Decimal("0.000001"))
    explicit = 1500 * _discount(FLASH) - Decimal("0.000100")
    assert today.explicit_saved == explicit.quantize(Decimal("0.000001"))
    assert today.saved == (1700 * _discount(FLASH) - Decimal("0.000100")).quantize(Decimal("0.000001"))

    [total] = cache_shares(days=7, per_day=False, agent_ids=[agent.pk])
    assert (total.day, total.input_tokens, total.cached_tokens) == (None, 7000, 2300)
    assert cache_shares(days=1, agent_ids=[other.pk]) == []


def test_an_explicit_cache_that_costs_more_than_it_saves_shows_a_loss():
    share = CacheShare(
        agent_id=1, agent="Wendy", input_tokens=100, cached_tokens=50, explicit_cached_tokens=50
    )
    share.explicit_gross, share.cache_cost = Decimal("0.000010"), Decimal("0.000250")
    assert share.explicit_saved == Decimal("-0.000240") and share.saved == Decimal("-0.000240")
    assert CacheShare(agent_id=1, agent="Wendy").as_row()["cached_share"] == "—"


def test_pruned_calls_keep_their_share_and_saving(agent, clock, utc, settings):
    settings.CINDY_RETAIN_LLM_CALLS_DAYS = 3
    _call(agent, input_tokens=1000, cached=600)
    _call(agent, input_tokens=2000, cached=1500, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.000300")
    clock.advance(hours=24 * 5)
    _call(agent, input_tokens=800, cached=400)
    before = [r.as_row() for r in cache_shares(days=7)]

    report = retention_run()

    assert report.deleted["llm_calls"] == 3
    assert [r.as_row() for r in cache_shares(days=7)] == before
    assert before[1]["explicit_cached_tokens"] == 1500 and before[1]["cache_cost"] == "0.000300"


def test_what_writing_to_anthropics_cache_cost_beyond_input_is_set_against_its_reads(
    agent, clock, utc, settings
):
    settings.CINDY_RETAIN_LLM_CALLS_DAYS = 3
    _call(agent, input_tokens=1500, cached=0, written=1200, provider="anthropic", model="claude-sonnet-4-6")
    _call(agent, input_tokens=1500, cached=1200, written=200, provider="anthropic", model="claude-sonnet-4-6")

    [day] = cache_shares(days=7)

    # 1200 read at 3.00 - 0.30 saved, 1400 written at 3.75 - 3.00 paid, per million
    assert day.implicit_saved == day.saved == Decimal("0.002190")
    clock.advance(hours=24 * 5)
    retention_run()
    assert [r.as_row() for r in cache_shares(days=7)] == [day.as_row()]


def test_the_llm_page_shows_the_cached_share_per_agent_and_day(verified_client, agent, clock, utc):
    _call(agent, input_tokens=1000, cached=600)
    clock.advance(hours=24)
    _call(agent, input_tokens=2000, cached=1500, explicit=True)

    html = verified_client.get("/admin/llm/offeredmodel/").content.decode()

    table = html.split('id="cache-share"')[1].split("</table>")[0]
    rows = table.split("<tbody>")[1].split("</tr>")[:-1]
    assert len(rows) == 2
    assert "2026-01-06" in rows[0] and "75.0 %" in rows[0] and ">1500<" in rows[0]
    assert "2026-01-05" in rows[1] and "60.0 %" in rows[1]
    assert str((600 * _discount(FLASH)).quantize(Decimal("0.000001"))) in rows[1]
    prices = html.split('id="llm-prices"')[1].split("</table>")[0]
    assert "4.5000" in prices.split(">gemini-2.5-pro<")[1].split("</tr>")[0]  # its storage per hour


def test_the_dashboard_shows_each_agents_share_and_saving_today(agent, clock, utc):
    _call(agent, input_tokens=2000, cached=1500, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.000100")

    [row] = selectors.llm_usage_today()

    assert row["cached_share"] == "75.0 %"
    explicit = (1500 * _discount(FLASH) - Decimal("0.000100")).quantize(Decimal("0.000001"))
    assert row["saved"] == row["explicit_saved"] == str(explicit)


def test_the_explicit_caches_saving_per_model_is_what_their_input_would_have_cost_less_what_it_did(
    agent, clock, utc
):
    other = Agent.objects.create(name="Heidi", phone="+15550000002")
    _call(agent, input_tokens=900_000, cached=800_000, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.500000")
    clock.advance(hours=24 * 40)
    _call(agent, input_tokens=1_200_000, cached=1_000_000, explicit=True)
    _call(agent, input_tokens=600_000, cached=500_000, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.300000")
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.025000")
    _call(agent, input_tokens=700_000, cached=600_000)  # the implicit cache's: not an explicit saving
    _call(agent, input_tokens=250_000, cached=200_000, explicit=True, model="gemini-2.5-pro")
    _call(
        agent,
        input_tokens=0,
        cached=0,
        purpose="cache",
        explicit=True,
        cost="1.150000",
        model="gemini-2.5-pro",
    )
    _call(other, input_tokens=150_000, cached=100_000, explicit=True)

    flash, pro = explicit_cache_savings(days=30, agent_ids=[agent.pk])

    # 2.5 Flash: 1.5 M tokens at 0.03 instead of 0.30 USD per million, 0.325 USD of making and storage.
    assert (flash.model, flash.tokens) == (FLASH, 1_500_000)
    assert flash.as_row() == {
        "provider": "gemini",
        "model": FLASH,
        "tokens": 1_500_000,
        "cached_cost": "0.045000",
        "uncached_cost": "0.450000",
        "cache_cost": "0.325000",
        "saved": "0.080000",
    }
    # 2.5 Pro: 0.2 M tokens at 0.125 instead of 1.25; a cache of 1.15 USD it did not earn back.
    assert (pro.model, pro.tokens, pro.saved) == ("gemini-2.5-pro", 200_000, Decimal("-0.925000"))
    assert (pro.cached_cost, pro.uncached_cost) == (Decimal("0.025"), Decimal("0.25"))

    everyone = {s.model: s for s in explicit_cache_savings(days=30)}
    assert everyone[FLASH].tokens == 1_600_000 and everyone[FLASH].saved == Decimal("0.107000")
    longer = {s.model: s for s in explicit_cache_savings(days=90, agent_ids=[agent.pk])}
    # A month earlier: 0.8 M more tokens (0.216 USD saved) and a 0.5 USD cache.
    assert longer[FLASH].tokens == 2_300_000 and longer[FLASH].saved == Decimal("-0.204000")
    assert explicit_cache_savings(days=30, agent_ids=[]) == []


def test_the_explicit_caches_saving_outlives_the_calls_retention_prunes(agent, clock, utc, settings):
    settings.CINDY_RETAIN_LLM_CALLS_DAYS = 3
    _call(agent, input_tokens=1_200_000, cached=1_000_000, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.300000")
    _call(agent, input_tokens=700_000, cached=600_000)
    clock.advance(hours=24 * 5)
    _call(agent, input_tokens=600_000, cached=500_000, explicit=True)
    before = [s.as_row() for s in explicit_cache_savings(days=30)]

    assert retention_run().deleted["llm_calls"] == 3
    assert [s.as_row() for s in explicit_cache_savings(days=30)] == before
    assert before[0]["tokens"] == 1_500_000 and before[0]["saved"] == "0.105000"


def test_the_llm_page_shows_the_explicit_caches_saving_per_model_over_the_chosen_period(
    verified_client, agent, clock, utc
):
    _call(agent, input_tokens=300_000, cached=200_000, explicit=True, model="gemini-2.5-pro")
    _call(
        agent,
        input_tokens=0,
        cached=0,
        purpose="cache",
        explicit=True,
        cost="1.150000",
        model="gemini-2.5-pro",
    )
    clock.advance(hours=24 * 40)
    _call(agent, input_tokens=1_200_000, cached=1_000_000, explicit=True)
    _call(agent, input_tokens=0, cached=0, purpose="cache", explicit=True, cost="0.200000")

    def table(query: str) -> list[str]:
        html = verified_client.get(f"/admin/llm/offeredmodel/{query}").content.decode()
        body = html.split('id="explicit-cache-saving"')[1].split("</table>")[0]
        return [row for row in body.split("<tbody>")[1].split("</tr>")[:-1]]

    [flash] = table("")  # the last 30 days
    cells = [c.split("<")[0] for c in flash.split("<td")[1:]]
    assert cells == [
        ">gemini",
        ">gemini-2.5-flash",
        ' class="num">1000000',
        ' class="num">0.030000',
        ' class="num">0.300000',
        ' class="num">0.200000',
        ' class="num">0.070000',
    ]
    [week] = table("?savings_days=7")
    assert ">gemini-2.5-flash<" in week
    flash, pro = table("?savings_days=90")
    assert ">gemini-2.5-pro<" in pro and ">-0.925000<" in pro
    assert table("?savings_days=5") == table("")  # a period the page does not offer: the default


def test_a_negative_cache_storage_price_is_refused(db):
    from django.core.exceptions import ValidationError

    from llm.prices import model_price_validate

    price = price_for("gemini", FLASH)
    price.cache_storage_per_million_hour = Decimal("-1")
    with pytest.raises(ValidationError, match="cache_storage_per_million_hour"):
        model_price_validate(price=price)
