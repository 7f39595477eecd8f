"""wait: do nothing for `delay` seconds (also put in front of every retry)."""

from __future__ import annotations

import datetime as dt

from cindy_site.clock import now
from engine.handlers.base import Defer, Done, HandlerContext, register


@register("wait")
async def handle_wait(ctx: HandlerContext) -> Done | Defer:
    when = now()
    raw = ctx.params.get("wait_until")
    if raw is None:
        delay = max(float(ctx.params.get("delay") or 0), 0.0)
        if delay == 0:
            return Done("waited 0s")
        until = when + dt.timedelta(seconds=delay)
        return Defer(until, f"waiting {delay:g}s", params={"wait_until": until.isoformat()})
    until = dt.datetime.fromisoformat(raw)
    if when < until:
        return Defer(until, "still waiting")
    return Done(f"waited until {until:%H:%M:%S}")
