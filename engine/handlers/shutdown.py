"""shutdown: stop the agent (not the process). The gateway then drops its client and lease."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from engine.handlers.base import Done, HandlerContext, register
from engine.leases import agent_stop


@register("shutdown")
async def handle_shutdown(ctx: HandlerContext) -> Done:
    await sync_to_async(agent_stop)(agent_id=ctx.agent.pk, reason="stopped by a shutdown task")
    ctx.agent.stopped = True
    return Done("agent stopped")
