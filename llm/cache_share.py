"""How much of the input the prompt caches really served, and what that saved, per agent (and day).

Read from the stored calls (`LLMCall`) and, for days whose calls retention has pruned, their daily
totals (`LLMUsageDaily`): the two never hold the same call. For each agent (and day):

- input tokens, cached tokens (read at the cached rate), and of those the tokens read from a Gemini
  explicit cache;
- the cached share: cached / input;
- saved by caching: the cached tokens at the full input price minus what they cost at the cached
  price, less what making and keeping the explicit caches cost (`LLMCall` purpose `cache`) and what
  writing to a prompt cache cost beyond the input price (Anthropic's cache writes,
  `LLMCall.cache_write_tokens`); shown apart for the implicit and the explicit caches.

`explicit_cache_savings` sums the explicit caches per model over a period: what the tokens read from
them cost at the cached price, what they would have cost at the full input price, and what making and
keeping the caches cost (their `LLMCall` rows of purpose `cache`).

Prices are the price table's today (`ModelPrice`, longest model prefix), as for every cost Cindy
shows; a model without a price saves nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Sum
from django.db.models.functions import TruncHour

from cindy_site.clock import now
from llm.models import LLMCall, LLMUsageDaily, ModelPrice

_MILLION = Decimal(1_000_000)
_CENT_FRACTION = Decimal("0.000001")


@dataclass
class CacheShare:
    """One agent's (and day's) cache figures; `day` is None for a total over the period."""

    agent_id: int | None
    agent: str
    day: dt.date | None = None
    input_tokens: int = 0
    cached_tokens: int = 0
    explicit_cached_tokens: int = 0
    #: The cached tokens' full input price minus their cached price, implicit and explicit apart.
    implicit_gross: Decimal = field(default_factory=Decimal)
    explicit_gross: Decimal = field(default_factory=Decimal)
    #: What making and keeping explicit caches cost.
    cache_cost: Decimal = field(default_factory=Decimal)

    @property
    def share(self) -> float | None:
        """Cached tokens over input tokens (None without input)."""
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def implicit_saved(self) -> Decimal:
        return _usd(self.implicit_gross)

    @property
    def explicit_saved(self) -> Decimal:
        """What the explicit caches saved, net of their own cost (negative when they cost more)."""
        return _usd(self.explicit_gross - self.cache_cost)

    @property
    def saved(self) -> Decimal:
        return _usd(self.implicit_gross + self.explicit_gross - self.cache_cost)

    def as_row(self) -> dict:
        """The figures as the dashboard and the LLMs page show them."""
        share = self.share
        return {
            "agent_id": self.agent_id,
            "agent": self.agent,
            "day": self.day.isoformat() if self.day else None,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "explicit_cached_tokens": self.explicit_cached_tokens,
            "cached_share": "—" if share is None else f"{share * 100:.1f} %",
            "saved": str(self.saved),
            "implicit_saved": str(self.implicit_saved),
            "explicit_saved": str(self.explicit_saved),
            "cache_cost": str(_usd(self.cache_cost)),
        }


def _usd(value: Decimal) -> Decimal:
    return value.quantize(_CENT_FRACTION, rounding=ROUND_HALF_UP)


class _Prices:
    """The price table read once, matched by longest model prefix per provider."""

    def __init__(self) -> None:
        self._rows = list(ModelPrice.objects.all())
        self._memo: dict[tuple[str, str], ModelPrice | None] = {}

    def _price(self, provider: str, model: str) -> ModelPrice | None:
        key = (provider, model)
        if key not in self._memo:
            best: ModelPrice | None = None
            for row in self._rows:
                if row.provider == provider and model.startswith(row.model_prefix):
                    if best is None or len(row.model_prefix) > len(best.model_prefix):
                        best = row
            self._memo[key] = best
        return self._memo[key]

    def input_prices(self, provider: str, model: str) -> tuple[Decimal, Decimal]:
        """USD per token: (the input price, the cached input price); (0, 0) for a model without a price."""
        best = self._price(provider, model)
        if best is None:
            return Decimal("0"), Decimal("0")
        return best.input_per_million / _MILLION, best.cached_input_per_million / _MILLION

    def cached_discount(self, provider: str, model: str) -> Decimal:
        """USD a cached token saves: the input price minus the cached input price, per token."""
        best = self._price(provider, model)
        return (
            Decimal("0")
            if best is None
            else (best.input_per_million - best.cached_input_per_million) / _MILLION
        )

    def write_premium(self, provider: str, model: str) -> Decimal:
        """USD writing a token to a prompt cache costs beyond its input price (Anthropic's cache writes),
        per token; 0 where writes are billed as input."""
        best = self._price(provider, model)
        if best is None or best.cache_write_per_million is None:
            return Decimal("0")
        return (best.cache_write_per_million - best.input_per_million) / _MILLION


def _period(days: int, at: dt.datetime | None) -> tuple[dt.date, dt.date, dt.datetime]:
    """(today, the period's first day, the moment it starts) for the last `days` days of TIME_ZONE."""
    tz = ZoneInfo(settings.TIME_ZONE)
    today = (at or now()).astimezone(tz).date()
    first = today - dt.timedelta(days=days - 1)
    return today, first, dt.datetime.combine(first, dt.time(), tzinfo=tz)


def cache_shares(
    *,
    days: int = 7,
    per_day: bool = True,
    at: dt.datetime | None = None,
    agent_ids: Collection[int] | None = None,
) -> list[CacheShare]:
    """The figures of the last `days` days (today included, days of TIME_ZONE), per agent and day
    (`per_day`) or per agent over the period; agents (and days) without calls are left out. Three
    queries: the calls summed per hour in the database (UTC, as the cost chart does), the daily
    totals, the prices."""
    tz = ZoneInfo(settings.TIME_ZONE)
    today, first, start = _period(days, at)
    prices = _Prices()
    shares: dict[tuple[int | None, dt.date | None], CacheShare] = {}

    def share_for(agent_id: int | None, name: str | None, day: dt.date) -> CacheShare:
        key = (agent_id, day if per_day else None)
        if key not in shares:
            shares[key] = CacheShare(agent_id=agent_id, agent=name or "(no agent)", day=key[1])
        return shares[key]

    calls = LLMCall.objects.filter(created__gte=start)
    rollups = LLMUsageDaily.objects.filter(day__gte=first)
    if agent_ids is not None:
        calls, rollups = calls.filter(agent_id__in=agent_ids), rollups.filter(agent_id__in=agent_ids)
    rows = (
        calls.annotate(hour=TruncHour("created", tzinfo=dt.UTC))
        .values("hour", "agent_id", "agent__name", "provider", "model", "purpose", "explicit_cache")
        .annotate(
            input=Sum("input_tokens"),
            cached=Sum("cached_tokens"),
            written=Sum("cache_write_tokens"),
            cost=Sum("cost"),
        )
        .order_by()
    )
    for row in rows:
        share = share_for(row["agent_id"], row["agent__name"], row["hour"].astimezone(tz).date())
        if row["purpose"] == LLMCall.Purpose.CACHE:
            share.cache_cost += row["cost"] or Decimal("0")
            continue
        cached = row["cached"] or 0
        share.input_tokens += row["input"] or 0
        share.cached_tokens += cached
        gross = cached * prices.cached_discount(row["provider"], row["model"])
        # Writing the prefix a later turn reads costs more than sending it (Anthropic): that is set
        # against what the reads saved.
        gross -= (row["written"] or 0) * prices.write_premium(row["provider"], row["model"])
        if row["explicit_cache"]:
            share.explicit_cached_tokens += cached
            share.explicit_gross += gross
        else:
            share.implicit_gross += gross
    for rollup in rollups.select_related("agent"):
        share = share_for(rollup.agent_id, rollup.agent.name if rollup.agent else None, rollup.day)
        discount = prices.cached_discount(rollup.provider, rollup.model)
        explicit = min(rollup.explicit_cached_tokens, rollup.cached_tokens)
        share.input_tokens += rollup.input_tokens
        share.cached_tokens += rollup.cached_tokens
        share.explicit_cached_tokens += explicit
        share.implicit_gross += (rollup.cached_tokens - explicit) * discount
        share.implicit_gross -= rollup.cache_write_tokens * prices.write_premium(
            rollup.provider, rollup.model
        )
        share.explicit_gross += explicit * discount
        share.cache_cost += rollup.cache_cost
    by_agent = sorted(shares.values(), key=lambda s: s.agent)
    return sorted(by_agent, key=lambda s: s.day or today, reverse=True)


@dataclass
class ExplicitSaving:
    """One model's explicit caches over a period."""

    provider: str
    model: str
    #: Input tokens read from explicit caches, by the calls made through them.
    tokens: int = 0
    #: Those tokens at the cached input price (what they cost) and at the input price (without a cache).
    cached_cost: Decimal = field(default_factory=Decimal)
    uncached_cost: Decimal = field(default_factory=Decimal)
    #: Making the caches (their tokens once at the input price) and keeping them (storage per hour).
    cache_cost: Decimal = field(default_factory=Decimal)

    @property
    def saved(self) -> Decimal:
        """Without the caches minus with them: negative when they cost more than they saved."""
        return _usd(self.uncached_cost - self.cached_cost - self.cache_cost)

    def as_row(self) -> dict:
        return {
            "provider": self.provider,
            "model": self.model,
            "tokens": self.tokens,
            "cached_cost": str(_usd(self.cached_cost)),
            "uncached_cost": str(_usd(self.uncached_cost)),
            "cache_cost": str(_usd(self.cache_cost)),
            "saved": str(self.saved),
        }


def explicit_cache_savings(
    *, days: int = 30, at: dt.datetime | None = None, agent_ids: Collection[int] | None = None
) -> list[ExplicitSaving]:
    """Per provider and model, over the last `days` days (today included, days of TIME_ZONE): the
    explicit caches' tokens and what they cost against what they would have cost, from the calls made
    through them, the rows of their making and storage, and the daily totals of pruned days. Models
    without an explicit cache in the period are left out."""
    _, first, start = _period(days, at)
    prices = _Prices()
    savings: dict[tuple[str, str], ExplicitSaving] = {}

    def add(provider: str, model: str, *, tokens: int, cache_cost: Decimal) -> None:
        saving = savings.setdefault((provider, model), ExplicitSaving(provider=provider, model=model))
        full, cached = prices.input_prices(provider, model)
        saving.tokens += tokens
        saving.uncached_cost += tokens * full
        saving.cached_cost += tokens * cached
        saving.cache_cost += cache_cost

    calls = LLMCall.objects.filter(created__gte=start, explicit_cache=True)
    rollups = LLMUsageDaily.objects.filter(day__gte=first).exclude(explicit_cached_tokens=0, cache_cost=0)
    if agent_ids is not None:
        calls, rollups = calls.filter(agent_id__in=agent_ids), rollups.filter(agent_id__in=agent_ids)
    rows = (
        calls.values("provider", "model", "purpose")
        .annotate(cached=Sum("cached_tokens"), cost=Sum("cost"))
        .order_by()
    )
    for row in rows:
        if row["purpose"] == LLMCall.Purpose.CACHE:
            add(row["provider"], row["model"], tokens=0, cache_cost=row["cost"] or Decimal("0"))
        else:
            add(row["provider"], row["model"], tokens=row["cached"] or 0, cache_cost=Decimal("0"))
    for rollup in rollups:
        tokens = min(rollup.explicit_cached_tokens, rollup.cached_tokens)
        add(rollup.provider, rollup.model, tokens=tokens, cache_cost=rollup.cache_cost)
    return sorted(savings.values(), key=lambda s: (s.provider, s.model))
