"""The policy for privileged task kinds. The LLM asks; this code decides.

Text anyone wrote can ask the LLM for anything, so a privileged task is judged against everything
that could have caused it (`TurnInputs`), not only against the message the turn answers:

- the messages since the agent's last turn (its last message, or the end of its last completed plan),
  including older messages edited since;
- the messages the prompt showed (the history window), which reach further back: a request refused
  once must not succeed later because an operator wrote something unrelated;
- text from outside the chat that the turn read: retrieved web pages, a cross-chat intention (an
  operator's nudge and its intent are the operators' word, not outside text).

The rules:

- block, unblock and clear-conversation only in direct messages, and not in a turn that read text
  from outside the chat (a web page must not clear a conversation);
- shutdown only when at least one operator (`CINDY_OPERATOR_IDS`, Telegram user ids) wrote since the
  agent's last turn and every one of those messages, and every message the prompt showed, was written
  by an operator and not forwarded, and the turn read nothing from outside the chat. In a group with
  other members this refuses shutdown; operators can ask in a direct message;
- xsend, send_media, event and schedule as `llm.policy_initiative` says (another conversation of the
  same agent, within the hop and hourly limits; the agent's own library; a future time; no overlapping
  entries);
- image as `llm.policy_image` says (not after text from outside the chat unless an operator allows
  it, within the daily limit, references from the agent's own library);
- the daily schedule planning turn (trigger `schedule`) only changes the agent's own records;
- a stored kind shared by all of the agent's chats (global memories, intentions) may update or delete
  by id only an entry this conversation created, unless the partner is an operator (a direct message
  with one of `CINDY_OPERATOR_IDS`): a stranger cannot have the agent rewrite what another chat
  stored (the prompt shows such entries without ids, `llm.prompt.sections.stored_sections`);
- every other kind that is neither an ordinary conversational kind nor a stored kind (which changes
  only the agent's own records) is refused until it has a rule here (a kind that writes to other
  chats, for instance).

Every refusal is recorded as a `policy_refused` activity event with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q

from conversations.models import ActivityEvent, Conversation, Message, TaskGraph
from conversations.services.activity import record_event
from conversations.services.carry import graph_triggers, xsend_depth
from llm.conversation import ChatMessage
from llm.file_sources import is_file_url
from llm.policy_image import image_refusal
from llm.policy_initiative import INITIATIVE_KINDS, initiative_refusal
from llm.policy_inputs import Source, TurnInputs
from llm.prompt.sections import partner_is_operator
from llm.tasks import Task
from memory.services.stored import stored_entry_foreign
from memory.stored_kinds import StoreContext, is_stored_kind, stored_kind

DM_ONLY = frozenset({"block", "unblock", "clear-conversation"})
OPERATOR_ONLY = frozenset({"shutdown"})
#: Kinds that act only inside this conversation's ordinary flow and need no privilege (a `voice` note
#: is a send spoken). Stored kinds
#: (`memory.stored_kinds`: remember, plan, ...), which change only the agent's own records, are too.
ORDINARY = frozenset({"send", "sticker", "react", "wait", "think", "retrieve", "voice"})
#: What the daily schedule planning turn may do besides the stored kinds: nothing that acts in a chat.
SCHEDULE_TURN_KINDS = frozenset({"think", "retrieve"})
#: More messages than this since the agent's last turn are not checked one by one: shutdown is refused.
MAX_CHECKED_MESSAGES = 500


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
    context = graph.context or {}
    outside = []
    # The agent's own documents (file:NAME) are the operators' text; web pages are anyone's.
    web = [p for p in context.get("retrieved") or [] if not is_file_url(str(p.get("url", "")))]
    if pages := len(web):
        outside.append(f"{pages} retrieved web page{'s' if pages != 1 else ''}")
    # Only an xsend (the turn's own or one it carries) reads another chat's intention: an operator's
    # nudge keeps its intent in the same `xsend` field, and the operator is not outside text.
    if any(item["trigger"] == TaskGraph.Trigger.XSEND for item in graph_triggers(graph)):
        outside.append("a cross-chat intention")
    return TurnInputs(
        conversation=conversation,
        since_last_turn=tuple(Source.of(m) for m in reversed(rows[:MAX_CHECKED_MESSAGES])),
        shown=tuple(Source.of(m) for m in history if not m.is_agent),
        outside=tuple(outside),
        too_many=len(rows) > MAX_CHECKED_MESSAGES,
        trigger=graph.trigger or "",
        xsend_depth=xsend_depth(graph),
    )


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


def _not_from_an_operator(sources: Iterable[Source], operators: set[int]) -> str:
    for source in sources:
        if source.forwarded_from:
            return f"{source.describe()} is forwarded from {source.forwarded_from}"
        if source.sender_id is None or source.sender_id not in operators:
            return f"{source.describe()} is not from an operator"
    return ""


def refusal_reason(task: Task, *, inputs: TurnInputs, earlier: int = 0) -> str:
    """Why `task` may not run in this turn, or "" when it may (`earlier`: tasks of its kind this
    reply already had allowed)."""
    conversation = inputs.conversation
    if inputs.trigger == TaskGraph.Trigger.SCHEDULE and not (
        task.kind in SCHEDULE_TURN_KINDS or is_stored_kind(task.kind)
    ):
        return f"{task.kind} is not allowed in the schedule planning turn: it only plans, it never acts in a chat"
    if task.kind == "image":
        return image_refusal(task, inputs=inputs, earlier=earlier)
    if task.kind in INITIATIVE_KINDS:
        return initiative_refusal(
            task, conversation=conversation, xsend_depth=inputs.xsend_depth, earlier=earlier
        )
    if is_stored_kind(task.kind) and task.id and not partner_is_operator(conversation):
        context = StoreContext(
            agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
        )
        return stored_entry_foreign(kind=task.kind, context=context, entry_id=task.id)
    if is_ordinary(task.kind):
        return ""
    outside = ", ".join(inputs.outside)
    if task.kind in DM_ONLY:
        if conversation.kind != Conversation.Kind.DM:
            return f"{task.kind} is only allowed in direct messages, and this is a {conversation.kind}"
        if outside:
            return f"{task.kind} is not allowed in a turn that read text from outside the chat ({outside})"
        return ""
    if task.kind in OPERATOR_ONLY:
        operators = set(settings.CINDY_OPERATOR_IDS)
        rule = (
            f"{task.kind} needs every message since the agent's last turn, and every message its prompt "
            "showed, to come from an operator (CINDY_OPERATOR_IDS)"
        )
        if outside:
            return f"{rule} and nothing from outside the chat; this turn read {outside}"
        if inputs.too_many:
            return f"{rule}; more than {MAX_CHECKED_MESSAGES} messages arrived since the agent's last turn"
        if not inputs.since_last_turn:
            return f"{rule}; no one has written since the agent's last turn"
        offender = _not_from_an_operator((*inputs.since_last_turn, *inputs.shown), operators)
        return f"{rule}: {offender}" if offender else ""
    return f"{task.kind} has no policy rule, so it is refused"


def _names_a_shared_entry(task: Task) -> bool:
    """A stored task that names an id of a kind all the agent's chats share (checked by owner)."""
    spec = stored_kind(task.kind)
    return bool(task.id and spec is not None and spec.owner_field)


def is_ordinary(kind: str) -> bool:
    return kind in ORDINARY or is_stored_kind(kind)


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
        unchecked = all(
            is_ordinary(t.kind) and t.kind not in INITIATIVE_KINDS and not _names_a_shared_entry(t)
            for t in tasks
        )
        if unchecked and trigger != TaskGraph.Trigger.SCHEDULE:
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
