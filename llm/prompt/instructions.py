"""The volatile end of the prompt: the instructions for this turn and the current time."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

TIME_FORMAT = "%A %B %d, %Y at %I:%M %p %Z"


@dataclass(frozen=True)
class TurnContext:
    """Why this turn happens. `trigger` is one of message, reaction, xsend, new_conversation,
    continuation (the graph's trigger)."""

    trigger: str = "message"
    target_message_id: int | None = None
    xsend_intent: str = ""
    reactions: tuple[str, ...] = ()  # e.g. ("Alice reacted 👍",) for a reaction trigger
    summarization: str = ""  # a summarization turn's instructions (trigger "summarize")


def specific_instructions(turn: TurnContext) -> str:
    """Exactly one of: cross-chat trigger, new conversation, target message, reaction, continuation."""
    if turn.trigger == "summarize":
        body = turn.summarization
    elif turn.trigger == "xsend" and turn.xsend_intent:
        body = (
            "You decided earlier, in another conversation, to write to this chat. Your intention was:\n\n"
            f"{turn.xsend_intent}\n\nAct on it now in a way that fits this conversation."
        )
    elif turn.trigger == "new_conversation" and turn.target_message_id is not None:
        body = (
            "This is the start of a new conversation: the message with message_id "
            f"{turn.target_message_id} is the first anyone has sent you here, and you have never talked "
            "before. Consider responding the way your character would meet someone new."
        )
    elif turn.trigger == "new_conversation":
        body = (
            "This is the start of a new conversation: nothing has been said yet. "
            "Open it the way your character would."
        )
    elif turn.trigger == "reaction" and turn.target_message_id is not None:
        seen = "; ".join(turn.reactions) if turn.reactions else "someone reacted"
        body = (
            f"There is a new reaction to your message with message_id {turn.target_message_id} ({seen}). "
            "Consider whether it calls for a response; doing nothing is fine."
        )
    elif turn.target_message_id is not None and turn.trigger in ("message", "xsend"):
        body = f"Consider responding to message with message_id {turn.target_message_id}."
    else:
        body = "Continue the conversation if you have something to add; if not, answer with an empty list."
    return "# Instructions For This Turn\n\n" + body


def current_time_section(now: dt.datetime, tz: dt.tzinfo) -> str:
    return "# Current Time\n\nThe current time is: " + now.astimezone(tz).strftime(TIME_FORMAT)


def turn_context_from_graph(graph: Any, *, reactions: tuple[str, ...] = ()) -> TurnContext:
    context = graph.context or {}
    intent = context.get("xsend") or context.get("intent") or ""
    if isinstance(intent, dict):
        intent = intent.get("content", "")
    return TurnContext(
        trigger=graph.trigger or "message",
        target_message_id=graph.target_message_id,
        xsend_intent=str(intent),
        reactions=reactions,
    )
