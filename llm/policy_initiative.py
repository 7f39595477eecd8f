"""The policy for the initiative kinds: xsend, event, schedule and send_media. The LLM asks; this decides.

- none of them in a turn that read text anybody could have written (`TurnInputs.untrusted`: a
  retrieved web page, or another chat's intention formed after reading one): a page that asks must
  not make the agent write to a third person, plan an event, change its day or send its pictures;
- event, schedule and send_media not after any text from outside the chat (`TurnInputs.outside`),
  another chat's intention included, as for image, block and clear-conversation. An xsend in a turn
  an intention started is bounded by the hop limit instead (below), which an operator may raise;
- `xsend` targets another conversation of the same agent, never the one it was asked in; a turn that
  xsend hops started may not xsend again once the chain is CINDY_XSEND_MAX_DEPTH hops deep (default
  1: a turn started by an xsend may not xsend), and an agent starts at most CINDY_XSENDS_PER_HOUR
  xsends an hour (the xsend nodes of its graphs, the ones this reply asks for included);
- `event` needs a readable time that is still in the future (a delete needs only the id);
- `schedule` is for agents whose persona has a "Daily Schedule", and an entry may not overlap another;
- `send_media` sends only an item of the agent's own media library.

Prompt text cannot widen any of this: the checks read the database, not the reply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cindy_site.clock import now
from conversations.models import Conversation
from conversations.services.initiative import xsend_limit_refusal
from memory.models import ScheduledEvent, ScheduleEntry
from memory.schedule_times import TimeError, parse_entry_time, parse_event_time, parse_interval
from memory.services.schedule import clash_label, schedule_clash

if TYPE_CHECKING:
    from llm.kinds.base import Task


def untrusted_refusal(task: Task, *, outside: tuple[str, ...], untrusted: tuple[str, ...]) -> str:
    """Why an initiative task may not run after what the turn read from outside the chat, or ""."""
    if untrusted:
        return (
            f"{task.kind} is not allowed in a turn that read text anybody could have written "
            f"({', '.join(untrusted)}): such text must not make the agent act beyond this reply"
        )
    if outside and task.kind != "xsend":
        return f"{task.kind} is not allowed in a turn that read text from outside the chat ({', '.join(outside)})"
    return ""


def initiative_refusal(
    task: Task, *, conversation: Conversation, xsend_depth: int = 0, earlier: int = 0
) -> str:
    """Why an initiative task may not run here, or "" when it may (other kinds: always "").

    `xsend_depth`: the xsend hops that led to this turn; `earlier`: tasks of the same kind this reply
    already had allowed (they count towards the hourly limit).
    """
    if task.kind == "xsend":
        return xsend_limit_refusal(conversation=conversation, depth=xsend_depth, earlier=earlier) or _xsend(
            task, conversation
        )
    check = _CHECKS.get(task.kind)
    return check(task, conversation) if check else ""


def _xsend(task: Task, conversation: Conversation) -> str:
    target = task.params["target_channel_id"]
    if target == conversation.peer_id:
        return "xsend cannot target the conversation it was asked in; use send here instead"
    if not Conversation.objects.filter(agent_id=conversation.agent_id, peer_id=target).exists():
        return f"xsend target {target} is not a conversation of agent {conversation.agent.name}"
    return ""


def _event(task: Task, conversation: Conversation) -> str:
    params = task.params
    if not params.get("content", "").strip():
        return ""  # a delete by id
    existing = (
        ScheduledEvent.objects.filter(
            agent_id=conversation.agent_id,
            channel_id=conversation.peer_id,
            topic_id=conversation.topic_id,
            entry_id=task.id,
        ).first()
        if task.id
        else None
    )
    time_raw = params.get("time") or (existing.time_raw if existing else "")
    if not time_raw:
        return 'event needs a "time" (ISO 8601, e.g. 2026-03-01T14:00:00) to be created'
    timezone = params.get("timezone", existing.timezone if existing else "")
    try:
        if params.get("interval"):
            parse_interval(params["interval"])
        due = parse_event_time(time_raw, timezone=timezone, agent_timezone=conversation.agent.timezone)
    except TimeError as exc:
        return f"event: {exc}"
    if params.get("occurrences") is not None and params["occurrences"] < 1:
        return f'event "occurrences" is {params["occurrences"]}: give 1 or more, or leave it out'
    if "time" in params and due <= now():
        return f"event time {time_raw} is in the past ({due:%Y-%m-%d %H:%M} UTC); give a future time"
    return ""


def _schedule(task: Task, conversation: Conversation) -> str:
    agent = conversation.agent
    if not agent.daily_schedule.strip():
        return f'agent {agent.name} keeps no schedule: its persona has no "Daily Schedule" section'
    params = task.params
    if not params.get("content", "").strip():
        return ""  # a delete by id
    existing = ScheduleEntry.objects.filter(agent=agent, entry_id=task.id).first() if task.id else None
    if existing is None:
        missing = [n for n in ("start_time", "end_time", "responsiveness") if params.get(n) in (None, "")]
        if missing:
            return "schedule entry needs " + ", ".join(f'"{n}"' for n in missing) + " to be created"
    try:
        start = parse_entry_time(
            params.get("start_time") or existing.start, agent_timezone=agent.timezone, name="start_time"
        )
        end = parse_entry_time(
            params.get("end_time") or existing.end, agent_timezone=agent.timezone, name="end_time"
        )
    except TimeError as exc:
        return f"schedule: {exc}"
    if end <= start:
        return f"schedule entry ends ({end:%Y-%m-%d %H:%M}) before it starts ({start:%Y-%m-%d %H:%M})"
    responsiveness = params.get("responsiveness")
    if responsiveness is not None and not 0 <= responsiveness <= 100:
        return f'schedule "responsiveness" is {responsiveness}: give 0 (asleep) to 100'
    clash = schedule_clash(agent_id=agent.pk, start=start, end=end, entry_id=task.id or "")
    if clash is not None:
        return (
            f"schedule entry {start:%Y-%m-%d %H:%M}-{end:%H:%M} overlaps {clash_label(clash)}: "
            "change or delete that one first"
        )
    return ""


def _send_media(task: Task, conversation: Conversation) -> str:
    from media_catalog.models import LibraryItem

    unique_id = task.params["unique_id"]
    if not LibraryItem.objects.filter(agent_id=conversation.agent_id, unique_id=unique_id).exists():
        return f"send_media: {unique_id!r} is not in agent {conversation.agent.name}'s media library"
    return ""


_CHECKS = {"xsend": _xsend, "event": _event, "schedule": _schedule, "send_media": _send_media}
#: The kinds checked here, stored (event, schedule) or not (xsend, send_media).
INITIATIVE_KINDS = frozenset(_CHECKS)
