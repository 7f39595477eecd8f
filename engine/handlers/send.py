"""send: type for a while (start-typing delay + length / typing speed), then send the text.

An agent already online in the chat (it wrote there within CINDY_ONLINE_WINDOW_SECONDS before the turn,
`engine.presence`) starts typing at once: no start-typing delay. The node's `start_delay` param records
which it paid.

Typing is shown by deferring the node, never by sleeping: each run renews the typing indicator and
defers until the typing time is over, then the text goes out with the node's stored random_id.
"""

from __future__ import annotations

import datetime as dt
import logging

from asgiref.sync import sync_to_async

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import TaskGraph
from conversations.services.ingest import message_record_sent
from conversations.services.nodes import node_store_random_id
from conversations.transport.base import AuthError, FloodWait, PermanentError, TransportError, topic_kwargs
from engine.handlers.base import Defer, Done, HandlerContext, NodeLost, register
from engine.presence import already_online

logger = logging.getLogger(__name__)

#: Used when the persona sets no "Start Typing Delay" (seconds) or "Typing Speed" (characters/second).
DEFAULT_START_TYPING_DELAY = 2
DEFAULT_TYPING_SPEED = 30
#: Telegram drops a typing indicator after about 6 seconds; renew it more often than that.
TYPING_RENEW_SECONDS = 5


def start_typing_delay(agent: Agent) -> float:
    return agent.start_typing_delay or DEFAULT_START_TYPING_DELAY


def typing_seconds(agent: Agent, text: str, *, online: bool = False) -> float:
    """How long the agent types `text`: the start-typing delay (none when it is already online in the
    chat, `engine.presence`) and the text's length at its typing speed."""
    speed = agent.typing_speed or DEFAULT_TYPING_SPEED
    return (0 if online else start_typing_delay(agent)) + len(text) / speed


async def stored_random_id(ctx: HandlerContext) -> int:
    """The node's random_id, committed in its own transaction before the first send attempt."""
    random_id = await sync_to_async(node_store_random_id)(node_id=ctx.node.pk, owner=ctx.owner)
    if random_id is None:
        raise NodeLost(f"node {ctx.node.pk} is no longer held by {ctx.owner}")
    ctx.node.random_id = random_id
    return random_id


async def show_typing(ctx: HandlerContext) -> None:
    """Typing is cosmetic: only errors that must change the schedule (flood, auth) propagate."""
    try:
        await ctx.transport.set_typing(
            ctx.conversation.peer_id, True, **topic_kwargs(ctx.conversation.topic_id)
        )
    except (FloodWait, AuthError):
        raise
    except TransportError as exc:
        logger.info("typing indicator failed for agent %s: %s", ctx.agent.name, exc)


async def type_then(ctx: HandlerContext, text: str) -> Defer | None:
    """Defer while the agent is still typing `text`; None once the typing time is over."""
    when = now()
    raw = ctx.params.get("typing_until")
    if raw is None:
        online = await sync_to_async(_already_online)(ctx)
        until = when + dt.timedelta(seconds=typing_seconds(ctx.agent, text, online=online))
        await show_typing(ctx)
        next_run = min(until, when + dt.timedelta(seconds=TYPING_RENEW_SECONDS))
        start = 0 if online else start_typing_delay(ctx.agent)
        why = "already online: no start-typing delay" if online else f"start-typing delay {start:g} s"
        return Defer(
            next_run,
            f"typing until {until:%H:%M:%S} ({why})",
            params={"typing_until": until.isoformat(), "start_delay": start},
        )
    until = dt.datetime.fromisoformat(raw)
    if when < until:
        await show_typing(ctx)
        return Defer(min(until, when + dt.timedelta(seconds=TYPING_RENEW_SECONDS)), "still typing")
    return None


def _already_online(ctx: HandlerContext) -> bool:
    """Whether the agent wrote in this chat within the online window before this turn began (what it
    sends in this turn does not count: each fresh exchange pays the start-typing delay once)."""
    created = TaskGraph.objects.filter(pk=ctx.node.graph_id).values_list("created", flat=True).first()
    return already_online(conversation_id=ctx.conversation.pk, before=created or now())


@register("send")
async def handle_send(ctx: HandlerContext) -> Done | Defer:
    text = str(ctx.params.get("text") or "")
    if not text.strip():
        raise PermanentError("EMPTY_TEXT", "send task has no text")
    random_id = await stored_random_id(ctx)
    deferred = await type_then(ctx, text)
    if deferred is not None:
        return deferred
    reply_to = ctx.params.get("reply_to")
    sent = await ctx.transport.send_text(
        ctx.conversation.peer_id,
        text,
        random_id=random_id,
        reply_to=reply_to,
        **topic_kwargs(ctx.conversation.topic_id),
    )
    await sync_to_async(message_record_sent)(
        agent=ctx.agent, conversation=ctx.conversation, sent=sent, text=text, reply_to=reply_to
    )
    return Done(f"sent #{sent.message_id}", {"message_id": sent.message_id})
