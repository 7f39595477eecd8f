"""What a replan does with the turn it would replace: join it, queue behind it, or replace it.

A conversation has one active graph. When a new trigger arrives while a graph is active, what the
active graph was for must not be lost (`graph_replan` decides with `replan_mode`):

- **join**: the active graph has not started planning (its `received` node is still pending). It is
  cancelled, and its trigger (with the triggers it carried itself) rides along in the new graph's
  `context["carried"]`: one LLM call sees all of them, each with its own prompt section.
- **queue**: the active graph's planning has started (the LLM may be answering it now, or its plan
  is being carried out) and one of the two turns is an initiative turn (event, xsend, nudge) or a turn
  with a prompt of its own (summarize, schedule, consolidate). The active graph goes on; the new trigger waits in
  its `context["queued"]` and starts as a turn of its own when that graph ends in any way. So an
  event's occurrence reaches the LLM once, and a reply being typed is not cancelled by an event.
- **replace**: a newer message while an answer to an older one is planned or typed: the old graph is
  cancelled and the new turn answers with the whole history (the original's rule); the messages the
  old graph was for are carried.

Summarize, schedule and consolidate turns have their own instructions, so they never join another
turn: a message cancels such a turn that has not started planning and the turn queues behind the
message's turn; a new summarize, schedule or consolidate trigger always queues.
"""

from __future__ import annotations

from typing import Any

from conversations.models import NodeKind, NodeStatus, TaskGraph, TaskNode

Trigger = TaskGraph.Trigger

#: Turns about the chat's messages: a newer one of these replaces an older one that is planning.
MESSAGE_TRIGGERS = frozenset(
    {Trigger.MESSAGE, Trigger.NEW_CONVERSATION, Trigger.REACTION, Trigger.CONTINUATION}
)
#: Turns the agent starts itself; their payload is in the context.
INITIATIVE_TRIGGERS = frozenset({Trigger.XSEND, Trigger.NUDGE, Trigger.EVENT})
#: Turns with a prompt and schema of their own: never joined with another trigger.
ALONE_TRIGGERS = frozenset({Trigger.SUMMARIZE, Trigger.SCHEDULE, Trigger.CONSOLIDATE})
#: Context keys that describe the graph's run rather than its trigger. Retrieved pages reach the next
#: turns by their fetch time instead (llm/retrieved_kept.py), for CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS.
RUN_KEYS = frozenset({"carried", "queued", "retrieved"})

JOIN, QUEUE, REPLACE = "join", "queue", "replace"


def trigger_item(graph: TaskGraph) -> dict[str, Any]:
    """The graph's own trigger as a carried or queued item: trigger, target message, payload."""
    context = {k: v for k, v in (graph.context or {}).items() if k not in RUN_KEYS}
    return {"trigger": graph.trigger, "target_message_id": graph.target_message_id, "context": context}


def graph_triggers(graph: TaskGraph) -> list[dict[str, Any]]:
    """Everything `graph` is for: its own trigger, then the triggers it carries."""
    return [trigger_item(graph), *list((graph.context or {}).get("carried") or [])]


def planning_started(graph: TaskGraph) -> bool:
    """Whether the graph's `received` node was claimed (running, done or failed)."""
    status = (
        TaskNode.objects.filter(graph=graph, kind=NodeKind.RECEIVED)
        .order_by("sequence")
        .values_list("status", flat=True)
        .first()
    )
    return status not in (None, NodeStatus.PENDING, NodeStatus.CANCELLED)


def replan_mode(previous: TaskGraph, trigger: str) -> str:
    """JOIN, QUEUE or REPLACE for a `trigger` arriving while `previous` is active (module docstring)."""
    if trigger in ALONE_TRIGGERS:
        return QUEUE
    started = planning_started(previous)
    if not started:
        return JOIN
    kinds = {item["trigger"] for item in graph_triggers(previous)}
    if trigger in MESSAGE_TRIGGERS and kinds <= MESSAGE_TRIGGERS:
        return REPLACE
    return QUEUE


def carried_into(
    previous: TaskGraph, *, trigger: str, target_message_id: int | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What a new graph takes over from the cancelled `previous`: (carried, queued).

    Summarize and schedule items go to the queue. Message items are carried only when the new turn
    does not answer a newer message itself (then the history shows them just before it, and the
    instruction to answer the newest covers them, as a burst of messages always has).
    """
    carried: list[dict[str, Any]] = []
    queued = list((previous.context or {}).get("queued") or [])
    answers_a_message = trigger in MESSAGE_TRIGGERS and target_message_id is not None
    for item in graph_triggers(previous):
        if item["trigger"] in ALONE_TRIGGERS:
            queued.append(item)
        elif item["trigger"] in MESSAGE_TRIGGERS and (answers_a_message or item["target_message_id"] is None):
            continue
        else:
            carried.append(item)
    return carried, queued


def describe(items: list[dict[str, Any]]) -> str:
    """A short list for the activity log: "event e1, message #12"."""
    parts = []
    for item in items:
        context = item.get("context") or {}
        if item["trigger"] == Trigger.EVENT:
            parts.append(f"event {(context.get('event') or {}).get('id', '?')}")
        elif item.get("target_message_id") is not None:
            parts.append(f"{item['trigger']} #{item['target_message_id']}")
        else:
            parts.append(str(item["trigger"]))
    return ", ".join(parts)


def xsend_depth(graph: TaskGraph | None) -> int:
    """How many xsend hops led to this turn: the deepest of its own and its carried triggers."""
    if graph is None:
        return 0
    return max(int((item.get("context") or {}).get("xsend_depth") or 0) for item in graph_triggers(graph))


def queued_has(graph: TaskGraph, key: str, value: Any) -> bool:
    """Whether an item with `context[key] == value` waits in `graph`'s queue or rides in its carried."""
    context = graph.context or {}
    items = [*(context.get("queued") or []), *(context.get("carried") or [])]
    return any((item.get("context") or {}).get(key) == value for item in items)
