"""When a conversation is summarized: the need check, the messages a summary covers, the turn's start.

A summarization turn is an ordinary graph whose trigger is `summarize`: its `received` node is the row
with a due time that the tick claims like any other, and it runs through the same planning task on
the workers. It is started only when the conversation has no active graph (a reply is never
cancelled for it), when one of its graphs finishes or new messages arrive. A message that triggers a
reply cancels a pending summarization turn like any replan; the need is still there afterwards, so
the turn starts again when the reply's graph finishes.

- Summarize: 70 or more visible messages after the last summarized one (SUMMARIZE_AFTER). The turn
  covers all of them but the newest 20 (KEEP_RECENT), at most BATCH_MAX per turn, oldest first.
- Consolidate: 7 or more summaries (CONSOLIDATE_AT); the turn merges the oldest 5 into one.
- A turn that changed nothing (the same coverage, summary count and waiting batches as a finished or
  failed summarization turn of this conversation) is not repeated, so a model that writes no summary
  costs one call, not a loop; 70 more messages make it worth another try.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count, Max, QuerySet

from conversations.models import Conversation, Message, TaskGraph
from conversations.selectors import first_partner_message_id
from conversations.services.graphs import graph_active, graph_replan
from memory.models import Summary
from memory.services.summaries import summaries_clear, summary_covered_id

logger = logging.getLogger(__name__)

SUMMARIZE_AFTER = 70
KEEP_RECENT = 20
BATCH_MAX = 400
CONSOLIDATE_AT = 7
CONSOLIDATE_BATCH = 5

SUMMARIZE = "summarize"
CONSOLIDATE = "consolidate"


def _summary_state(conversation: Conversation) -> tuple[int, int | None]:
    """The conversation's summary count and the highest message id they cover, in one query."""
    state = Summary.objects.filter(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
    ).aggregate(count=Count("pk"), covered=Max("last_message_id"))
    return state["count"], state["covered"]


def unsummarized_messages(conversation: Conversation) -> QuerySet[Message]:
    """Visible messages after the last summarized one (and, with Reset Context On First Message, not
    before the partner's first message)."""
    covered = summary_covered_id(
        agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
    )
    return _messages_after(conversation, covered)


def _messages_after(conversation: Conversation, covered: int | None) -> QuerySet[Message]:
    """`unsummarized_messages`, the summaries' coverage read already (None: no summary)."""
    rows = Message.objects.filter(conversation=conversation, deleted=False)
    if covered is not None:
        rows = rows.filter(message_id__gt=covered)
    if conversation.agent.reset_context_on_first_message:
        floor = first_partner_message_id(conversation=conversation)
        if floor is not None:
            rows = rows.filter(message_id__gte=floor)
    return rows


def messages_to_summarize(conversation: Conversation, *, everything: bool = False) -> list[Message]:
    """The messages a summarization turn covers, oldest first: all unsummarized ones but the newest
    KEEP_RECENT (`everything`: all of them, for an operator's "Summarize now"), at most BATCH_MAX."""
    rows = unsummarized_messages(conversation)
    if not everything:
        kept = list(rows.order_by("-message_id").values_list("message_id", flat=True)[:KEEP_RECENT])
        if len(kept) < KEEP_RECENT:
            return []
        rows = rows.filter(message_id__lt=kept[-1])
    return list(rows.order_by("message_id")[:BATCH_MAX])


#: How far back the need check counts unsummarized messages (a bound on its query).
COUNT_LIMIT = SUMMARIZE_AFTER * 20


def summarization_needs(conversation: Conversation) -> list[str]:
    """What is due, in the order it is done: "consolidate" (CONSOLIDATE_AT summaries or more), then
    "summarize" (SUMMARIZE_AFTER unsummarized messages or more)."""
    needs = []
    count, covered = _summary_state(conversation)
    if count >= CONSOLIDATE_AT:
        needs.append(CONSOLIDATE)
    if _unsummarized_count(conversation, limit=SUMMARIZE_AFTER, covered=covered) >= SUMMARIZE_AFTER:
        needs.append(SUMMARIZE)
    return needs


def _unsummarized_count(conversation: Conversation, *, limit: int, covered: int | None) -> int:
    return len(_messages_after(conversation, covered).values("pk")[:limit])


def _attempt_key(conversation: Conversation, need: str) -> str:
    """What a turn for `need` would start from: the coverage, the number of summaries, and how many
    SUMMARIZE_AFTER-sized batches of messages wait. A turn that changed none of them is not repeated;
    70 more messages make it worth another try."""
    count, covered = _summary_state(conversation)
    batches = _unsummarized_count(conversation, limit=COUNT_LIMIT, covered=covered) // SUMMARIZE_AFTER
    return f"{need}:{covered}:{count}:{batches}"


def summarization_start(
    *, conversation: Conversation, everything: bool = False, reason: str = ""
) -> TaskGraph | None:
    """Start a summarization turn when one is due and the conversation has no active graph.

    The first due need whose last attempt (a finished or failed turn from the same starting point)
    is not repeated wins, so a consolidation that keeps failing does not hold summarization back.
    `everything` (an operator's "Summarize now") summarizes whenever anything is unsummarized.
    Returns the new graph, or None when nothing was started.
    """
    with transaction.atomic():
        if graph_active(conversation=conversation) is not None:
            return None
        if everything:
            needs = [SUMMARIZE] if unsummarized_messages(conversation).exists() else []
        else:
            needs = summarization_needs(conversation)
        attempts = TaskGraph.objects.filter(
            conversation=conversation,
            trigger=TaskGraph.Trigger.SUMMARIZE,
            status__in=(TaskGraph.Status.DONE, TaskGraph.Status.FAILED),
        )
        for need in needs:
            key = _attempt_key(conversation, need)
            if not everything and attempts.filter(context__summarize__key=key).exists():
                continue
            context = {"summarize": {"need": need, "key": key, "everything": everything, "reason": reason}}
            return graph_replan(
                conversation=conversation,
                trigger=TaskGraph.Trigger.SUMMARIZE,
                target_message_id=None,
                context=context,
            )
        return None


def summarization_start_if_due(*, conversation_id: int) -> TaskGraph | None:
    """The need check after a graph finished or messages arrived; quiet conversations are left alone."""
    conversation = Conversation.objects.select_related("agent").filter(pk=conversation_id).first()
    if conversation is None:
        return None
    agent = conversation.agent
    if agent.disabled or agent.stopped or conversation.muted or conversation.blocked:
        return None
    if conversation.kind == Conversation.Kind.CHANNEL:
        return None
    if not summarization_needs(conversation):
        return None  # the usual case, read without a transaction; the start checks again inside one
    return summarization_start(conversation=conversation, reason="due")


def first_message_clear(*, conversation: Conversation, message: Message) -> int:
    """The persona flags, when a partner's first message of a DM arrives (as the original acts on them).

    - Clear Summaries On First Message: the conversation's summaries are deleted.
    - Reset Context On First Message: its summaries and plans are deleted (and the history shown to
      the agent starts at this message, see llm.conversation.history_start).

    Returns the rows deleted.
    """
    agent = conversation.agent
    reset, clear = agent.reset_context_on_first_message, agent.clear_summaries_on_first_message
    if not (reset or clear) or message.is_agent or message.is_service or message.deleted:
        return 0
    if first_partner_message_id(conversation=conversation) != message.message_id:
        return 0
    deleted = summaries_clear(
        agent_id=agent.pk, channel_id=conversation.peer_id, plans=reset, topic_id=conversation.topic_id
    )
    if deleted:
        logger.info(
            "agent %s: first message from %s; %d summaries/plans cleared",
            agent.name,
            conversation.peer_id,
            deleted,
        )
    return deleted


def conversations_summarize_now(*, conversations: list[Conversation]) -> str:
    """An operator's "Summarize now": a summarization turn over everything unsummarized, for each
    conversation that has no turn in progress. Returns what happened, for the operator."""
    started, busy, nothing = [], [], []
    for conversation in conversations:
        name = str(conversation)
        if summarization_start(conversation=conversation, everything=True, reason="operator") is not None:
            started.append(name)
        elif _busy(conversation):
            busy.append(name)
        else:
            nothing.append(name)
    parts = []
    if started:
        parts.append(f"summarizing {len(started)} chat(s); the agent's gateway runs the turn")
    if busy:
        parts.append("a turn is in progress in " + ", ".join(busy) + ": try again when it is done")
    if nothing:
        parts.append("nothing to summarize in " + ", ".join(nothing))
    return "; ".join(parts) + "."


def _busy(conversation: Conversation) -> bool:
    return graph_active(conversation=conversation) is not None
