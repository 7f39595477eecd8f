"""LLM cost per agent and per day, read for the dashboard's chart and the API's `/status/costs`.

Calls are summed per hour in the database (UTC, so no time-zone tables are needed on MySQL), then the
hours are put into days of TIME_ZONE here: a few hundred rows per agent at most.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Sum
from django.db.models.functions import TruncHour

from cindy_site.clock import now
from llm.models import LLMCall, LLMUsageDaily

DAYS = 14


def daily_costs(
    *, days: int = DAYS, at: dt.datetime | None = None, agent_ids: Collection[int] | None = None
) -> dict[str, Any]:
    """{"days": [date...], "agents": [{"name", "values": [Decimal per day], "total"}], "total"}."""
    tz = ZoneInfo(settings.TIME_ZONE)
    today = (at or now()).astimezone(tz).date()
    dates = [today - dt.timedelta(days=offset) for offset in range(days - 1, -1, -1)]
    start = dt.datetime.combine(dates[0], dt.time(), tzinfo=tz)
    rows = (
        LLMCall.objects.filter(
            created__gte=start, **({} if agent_ids is None else {"agent_id__in": agent_ids})
        )
        .annotate(hour=TruncHour("created", tzinfo=dt.UTC))
        .values("hour", "agent__name")
        .annotate(cost=Sum("cost"))
        .order_by()
    )
    index = {day: i for i, day in enumerate(dates)}
    agents: dict[str, list[Decimal]] = {}
    for row in rows:
        position = index.get(row["hour"].astimezone(tz).date())
        if position is None:
            continue
        values = agents.setdefault(row["agent__name"] or "(no agent)", [Decimal("0")] * days)
        values[position] += row["cost"] or Decimal("0")
    # LLM calls pruned by retention live on as daily totals (engine/retention.py).
    for day, name, cost in _usage_daily_costs(since=dates[0], agent_ids=agent_ids):
        position = index.get(day)
        if position is not None:
            values = agents.setdefault(name or "(no agent)", [Decimal("0")] * days)
            values[position] += cost or Decimal("0")
    series = [
        {"name": name, "values": values, "total": sum(values, Decimal("0"))}
        for name, values in sorted(agents.items())
    ]
    return {"days": dates, "agents": series, "total": sum((s["total"] for s in series), Decimal("0"))}


def _usage_daily_costs(*, since: dt.date, agent_ids=None) -> list[tuple[dt.date, str | None, object]]:
    """(day, agent name, cost) of the pruned LLM calls from `since` on (of `agent_ids` only, when
    given)."""
    rows = LLMUsageDaily.objects.filter(day__gte=since)
    if agent_ids is not None:
        rows = rows.filter(agent_id__in=agent_ids)
    return list(
        rows.values("day", "agent__name")
        .annotate(total=Sum("cost"))
        .order_by()
        .values_list("day", "agent__name", "total")
    )
