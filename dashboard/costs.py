"""LLM cost per agent and per day, and the stacked bar chart the dashboard draws from it as inline SVG.

Calls are summed per hour in the database (UTC, so no time-zone tables are needed on MySQL), then the
hours are put into days of TIME_ZONE here: a few hundred rows per agent at most.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Sum
from django.db.models.functions import TruncHour

from cindy_site.clock import now
from engine.retention import usage_daily_costs
from llm.models import LLMCall

DAYS = 14
#: Colour-blind-friendly series colours (Okabe-Ito), reused in order.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WIDTH, HEIGHT = 640, 190
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 10, 26


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
    for day, name, cost in usage_daily_costs(since=dates[0], agent_ids=agent_ids):
        position = index.get(day)
        if position is not None:
            values = agents.setdefault(name or "(no agent)", [Decimal("0")] * days)
            values[position] += cost or Decimal("0")
    series = [
        {"name": name, "values": values, "total": sum(values, Decimal("0"))}
        for name, values in sorted(agents.items())
    ]
    return {"days": dates, "agents": series, "total": sum((s["total"] for s in series), Decimal("0"))}


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (the chart's top gridline)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5):
        if value <= step * magnitude * (1 + 1e-9):
            return step * magnitude
    return 10 * magnitude


def cost_chart(costs: dict[str, Any]) -> dict[str, Any]:
    """Geometry for the stacked bars: one bar per day, one segment per agent, plus axis labels."""
    days, series = costs["days"], costs["agents"]
    totals = [sum((s["values"][i] for s in series), Decimal("0")) for i in range(len(days))]
    top = _nice_ceiling(float(max(totals, default=Decimal("0"))))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(days), 1)
    bar = slot * 0.7
    bars = []
    for i, day in enumerate(days):
        x = LEFT + i * slot + (slot - bar) / 2
        y = TOP + plot_h
        segments = []
        for n, s in enumerate(series):
            value = s["values"][i]
            if value <= 0:
                continue
            h = float(value) / top * plot_h
            y -= h
            segments.append(
                {
                    "x": round(x, 1), "y": round(y, 1), "w": round(bar, 1), "h": round(max(h, 0.5), 1),
                    "colour": COLOURS[n % len(COLOURS)],
                    "label": f"{s['name']} · {day:%b %d}: ${value:.4f}",
                }
            )  # fmt: skip
        bars.append(
            {
                "segments": segments,
                "label_x": round(x + bar / 2, 1),
                # Every other day is labelled, always including today (the last bar).
                "label": f"{day:%b} {day.day}" if (len(days) - 1 - i) % 2 == 0 else "",
                "total": f"${totals[i]:.4f}",
            }
        )
    grid = [{"y": round(TOP + plot_h - f * plot_h, 1), "label": f"${top * f:.4g}"} for f in (0, 0.5, 1)]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "axis_y": TOP + plot_h,
        "label_y": HEIGHT - 8,
        "bars": bars,
        "grid": grid,
        "legend": [
            {"name": s["name"], "colour": COLOURS[n % len(COLOURS)], "total": f"${s['total']:.4f}"}
            for n, s in enumerate(series)
        ],
        "first_day": days[0] if days else None,
        "last_day": days[-1] if days else None,
        "total": f"${costs['total']:.4f}",
    }
