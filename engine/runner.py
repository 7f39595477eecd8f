"""Running one claimed Telegram-kind node in the gateway, with the failure rules.

- `Done` completes the node, `Defer` puts it back until a time (no attempt counted).
- `FloodWait` is not a failure: the node waits the time Telegram asks and the agent pauses.
- `PermanentError` fails the node at once (the reason is kept on it) and deletes the graph.
- `AuthError` stops the agent with `last_error` set; the node goes back to pending for later.
- Anything else is a transient failure: retried after a wait node, up to CINDY_MAX_ATTEMPTS.
Every write is conditional on the claim token, so a node lost meanwhile changes nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass

from asgiref.sync import sync_to_async

from cindy_site.clock import now
from conversations.models import TaskNode
from conversations.services.nodes import node_complete, node_defer, node_fail, node_release
from conversations.transport.base import AuthError, FloodWait, PermanentError, Transport
from engine.handlers import Defer, Done, HandlerContext, NodeLost, handler_for
from engine.leases import agent_stop

logger = logging.getLogger(__name__)

#: A Telegram action that takes longer than this is treated as a failed attempt.
ACTION_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class RunResult:
    outcome: str  # done | deferred | retried | deleted | flood | auth | lost
    flood_until: dt.datetime | None = None


async def run_node(*, node: TaskNode, owner: str, transport: Transport) -> RunResult:
    handler = handler_for(node.kind)
    if handler is None:
        outcome = await sync_to_async(node_fail)(
            node_id=node.pk, owner=owner, error=f"no handler for node kind {node.kind!r}", permanent=True
        )
        return RunResult(outcome)
    ctx = HandlerContext(
        node=node, agent=node.agent, conversation=node.conversation, transport=transport, owner=owner
    )
    try:
        result = await asyncio.wait_for(handler(ctx), ACTION_TIMEOUT_SECONDS)
    except NodeLost:
        return RunResult("lost")
    except FloodWait as exc:
        until = now() + dt.timedelta(seconds=max(exc.seconds, 1))
        await sync_to_async(node_defer)(
            node_id=node.pk, owner=owner, until=until, reason=f"flood wait: {exc}"
        )
        return RunResult("flood", flood_until=until)
    except AuthError as exc:
        await sync_to_async(node_release)(node_id=node.pk, owner=owner, reason=f"agent stopped: {exc}")
        await sync_to_async(agent_stop)(
            agent_id=node.agent_id, reason=f"Telegram refused the session: {exc.reason}", error=str(exc)
        )
        return RunResult("auth")
    except PermanentError as exc:
        error = f"{exc.reason}: {exc}" if str(exc) != exc.reason else exc.reason
        return RunResult(
            await sync_to_async(node_fail)(node_id=node.pk, owner=owner, error=error, permanent=True)
        )
    except Exception as exc:  # transient: the node is retried
        logger.warning("node %s (%s) of agent %s failed: %r", node.pk, node.kind, node.agent_id, exc)
        error = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TimeoutError) else "timed out"
        return RunResult(await sync_to_async(node_fail)(node_id=node.pk, owner=owner, error=error))
    if isinstance(result, Defer):
        await sync_to_async(node_defer)(
            node_id=node.pk, owner=owner, until=result.until, reason=result.reason, params=result.params
        )
        return RunResult("deferred")
    assert isinstance(result, Done)
    done = await sync_to_async(node_complete)(
        node_id=node.pk, owner=owner, result=result.result, summary=result.summary
    )
    return RunResult("done" if done else "lost")
