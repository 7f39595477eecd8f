"""The policy for privileged task kinds. The LLM asks; this code decides.

Text anyone wrote can ask the LLM for anything, so a privileged task is judged against everything
that could have caused it (`TurnInputs`), not only against the message the turn answers:

- the messages since the agent's last turn (its last message, or the end of its last completed plan),
  including older messages edited since;
- the messages the prompt showed (the history window), which reach further back: a request refused
  once must not succeed later because an operator wrote something unrelated;
- text from outside the chat that the turn read: retrieved web pages, a cross-chat intention (an
  operator's nudge and its intent are the operators' word, not outside text).

The rules, each declared as its kind's policy in the kind's module (`llm.kinds`):

- block, unblock and clear-conversation only in direct messages, and not in a turn that read text
  from outside the chat (a web page must not clear a conversation; `llm.kinds.policies`);
- shutdown only when at least one operator (`CINDY_OPERATOR_IDS`, Telegram user ids) wrote since the
  agent's last turn and every one of those messages, and every message the prompt showed, was written
  by an operator and not forwarded, and the turn read nothing from outside the chat. In a group with
  other members this refuses shutdown; operators can ask in a direct message (`llm.kinds.policies`);
- xsend, send_media, event and schedule as `llm.policy_initiative` says: not in a turn that read text
  anybody could have written (a web page must not make the agent write to a third person, plan an
  event, change its day or send its pictures), event, schedule and send_media not after any text from
  outside the chat (another chat's intention included; xsend chains are bounded by the hop limit
  instead); then another conversation of the same agent, within the hop and hourly limits; the
  agent's own library; a future time; no overlapping entries;
- image as `llm.kinds.image` says (not after text from outside the chat unless an operator allows
  it, within the daily limit, references from the agent's own library);
- the daily schedule planning turn (trigger `schedule`) only changes the agent's own records; a
  consolidation turn (trigger `consolidate`) only writes notes, memories, plans and intentions;
- a stored kind shared by all of the agent's chats (global memories, intentions) may update or delete
  by id only an entry this conversation created, unless the partner is an operator (a direct message
  with one of `CINDY_OPERATOR_IDS`): a stranger cannot have the agent rewrite what another chat
  stored (the prompt shows such entries without ids, `llm.prompt.sections.stored_sections`;
  `llm.kinds.stored`);
- every other kind that is neither an ordinary conversational kind nor a stored kind (which changes
  only the agent's own records) is refused until its module declares a rule (the base
  `llm.kinds.base.Policy` refuses), and so is a kind no module declares.

Every refusal is recorded as a `policy_refused` activity event with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import Q

from conversations.models import ActivityEvent, Conversation, Message, TaskGraph
from conversations.services.activity import record_event
from conversations.services.carry import graph_triggers, xsend_depth
from llm.conversation import ChatMessage
from llm.file_sources import is_file_url
from llm.kinds import Task, task_kind
from llm.policy_inputs import MAX_CHECKED_MESSAGES, Source, TurnInputs
from memory.models import Memory

__all__ = ["MAX_CHECKED_MESSAGES", "Refusal", "apply_policy", "outside_text", "refusal_reason", "turn_inputs"]


@dataclass(frozen=True)
class Refusal:
    task: Task
    reason: str


def turn_inputs(
    *, conversation: Conversation, graph: TaskGraph, history: Iterable[Message | ChatMessage]
) -> TurnInputs:
    """The inputs of the turn planned in `graph` (of `conversation`), whose prompt showed `history`
    (its window, `llm.conversation.history_window`, or the messages themselves)."""
    boundary = _last_turn_end(conversation, exclude_graph_id=graph.pk)
    recent = Message.objects.filter(conversation=conversation, is_agent=False)
    if boundary is not None:
        recent = recent.filter(Q(date__gte=boundary) | Q(edited_at__gte=boundary))
    rows = list(recent.order_by("-message_id")[: MAX_CHECKED_MESSAGES + 1])
    outside, untrusted = outside_text(graph)
    return TurnInputs(
        conversation=conversation,
        since_last_turn=tuple(Source.of(m) for m in reversed(rows[:MAX_CHECKED_MESSAGES])),
        shown=tuple(Source.of(m) for m in history if not m.is_agent),
        outside=outside,
        untrusted=untrusted,
        too_many=len(rows) > MAX_CHECKED_MESSAGES,
        trigger=graph.trigger or "",
        xsend_depth=xsend_depth(graph),
    )


def outside_text(graph: TaskGraph) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the turn planned in `graph` read from outside its chat, and the part of it anybody could
    have written: (outside, untrusted), each a list of labels such as "1 retrieved web page".

    - Retrieved web pages (the turn's own and those kept from earlier turns, both stored in the graph)
      are outside and untrusted; the agent's own documents (`file:NAME`) are the operators' text.
    - Another chat's intention (an xsend, the turn's own trigger or one it carries) is outside; it is
      untrusted too when the turn that formed it had read untrusted text (`xsend_untrusted`, recorded
      by `conversations.services.initiative.conversation_xsend`). An operator's nudge keeps its intent
      in the same `xsend` field, and the operator is not outside text.
    """
    context = graph.context or {}
    outside: list[str] = []
    untrusted: list[str] = []
    web = [p for p in context.get("retrieved") or [] if not is_file_url(str(p.get("url", "")))]
    if pages := len(web):
        outside.append(f"{pages} retrieved web page{'s' if pages != 1 else ''}")
        untrusted.append(outside[-1])
    intents = [item for item in graph_triggers(graph) if item["trigger"] == TaskGraph.Trigger.XSEND]
    if intents:
        outside.append("a cross-chat intention")
    read = sorted(
        {str(u) for item in intents for u in (item.get("context") or {}).get("xsend_untrusted") or []}
    )
    if read:
        untrusted.append(f"a cross-chat intention formed after reading {', '.join(read)}")
    return tuple(outside), tuple(untrusted)


def _last_turn_end(conversation: Conversation, *, exclude_graph_id: int | None):
    """When the agent last acted here: its newest message, or the end of its last completed plan.

    The plan's end is taken to the whole second, the precision of Telegram's message dates: a message
    written in the second the plan finished is dated before the finish, and is still new."""
    said = (
        Message.objects.filter(conversation=conversation, is_agent=True)
        .order_by("-message_id")
        .values_list("date", flat=True)
        .first()
    )
    planned = (
        TaskGraph.objects.filter(
            conversation=conversation, status=TaskGraph.Status.DONE, finished__isnull=False
        )
        .exclude(pk=exclude_graph_id)
        .order_by("-finished")
        .values_list("finished", flat=True)
        .first()
    )
    if planned is not None:
        planned = planned.replace(microsecond=0)
    return max((t for t in (said, planned) if t is not None), default=None)


def refusal_reason(task: Task, *, inputs: TurnInputs, earlier: int = 0) -> str:
    """Why `task` may not run in this turn, or "" when it may (`earlier`: tasks of its kind this
    reply already had allowed). Each kind's own policy (`llm.kinds`) decides."""
    kind = task_kind(task.kind)
    if inputs.trigger == TaskGraph.Trigger.SCHEDULE and (kind is None or not kind.policy.in_schedule_turn):
        return f"{task.kind} is not allowed in the schedule planning turn: it only plans, it never acts in a chat"
    if inputs.trigger == TaskGraph.Trigger.CONSOLIDATE and (
        kind is None or not kind.policy.in_consolidation_turn
    ):
        return (
            f"{task.kind} is not allowed in a consolidation turn: it only writes notes, memories, plans "
            "and intentions, it never acts in a chat"
        )
    if inputs.trigger == TaskGraph.Trigger.CONSOLIDATE and task.kind == "remember" and task.id:
        agent_id = inputs.conversation.agent_id
        if Memory.objects.filter(agent_id=agent_id, kind=Memory.Kind.CURATED, entry_id=task.id).exists():
            return (
                f"remember {task.id} names a curated memory, which a consolidation turn never changes "
                "(operators edit it in the admin or its memory file): write a new memory instead"
            )
    if kind is None:
        return f"{task.kind} has no policy rule, so it is refused"
    return kind.policy.refusal(task, inputs=inputs, earlier=earlier)


#: Turns that may change only the agent's records: every task is judged, whatever its kind.
_RECORDS_ONLY = (TaskGraph.Trigger.SCHEDULE, TaskGraph.Trigger.CONSOLIDATE)


def _needs_inputs(task: Task) -> bool:
    kind = task_kind(task.kind)
    return kind is None or kind.policy.needs_inputs(task)


def apply_policy(
    tasks: list[Task],
    *,
    inputs: TurnInputs | Callable[[], TurnInputs],
    node_id: int | None = None,
    trigger: str = "",
) -> tuple[list[Task], list[Refusal]]:
    """Split tasks into allowed and refused, recording one activity event per refusal.

    `inputs` may be a function that reads them: it is called only when a task is privileged (or checked
    against the database, or the turn is the schedule planning turn, `trigger`), so an ordinary turn
    costs no queries here.
    """
    if callable(inputs):
        if not any(_needs_inputs(t) for t in tasks) and trigger not in _RECORDS_ONLY:
            return list(tasks), []
        inputs = inputs()
    conversation = inputs.conversation
    allowed: list[Task] = []
    refused: list[Refusal] = []
    for task in tasks:
        earlier = sum(1 for t in allowed if t.kind == task.kind)
        reason = refusal_reason(task, inputs=inputs, earlier=earlier)
        if not reason:
            allowed.append(task)
            continue
        refused.append(Refusal(task, reason))
        record_event(
            ActivityEvent.Kind.POLICY_REFUSED,
            agent_id=conversation.agent_id,
            conversation_id=conversation.pk,
            node_id=node_id,
            summary=f"Refused {task.kind}: {reason}",
            data={"kind": task.kind, "params": task.params, "reason": reason},
        )
    return allowed, refused
