"""The stacked bar chart of LLM cost per agent and day (`llm.costs.daily_costs`), drawn as inline SVG."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

#: Colour-blind-friendly series colours (Okabe-Ito), reused in order.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
WIDTH, HEIGHT = 640, 190
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 10, 26


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
