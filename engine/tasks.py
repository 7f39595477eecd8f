"""django-q2 tasks. They take ids only and run on workers, never in the gateway.

`run_received` plans a conversation's turn: the LLM layer builds the prompt from the DB mirror, calls
the provider and validates the reply; this module then stores the stored kinds (`remember`, `plan`,
... through `memory.services.stored`) and turns the rest into child nodes: in order, or along the
reply's `depends_on` edges.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import transaction

from cindy_site.clock import get_clock, now
from conversations.models import ActivityEvent, NodeKind, NodeStatus, TaskNode
from conversations.selectors import node_to_plan
from conversations.services.activity import record_event
from conversations.services.graph_finish import graph_finish_if_complete
from conversations.services.graphs import PlannedNode, graph_append_plan
from conversations.services.nodes import node_defer, node_fail
from engine.brakes import brake_hold
from engine.schedule_planning import schedule_retry_after_config_error
from engine.task_deaths import task_run_end, task_run_start
from llm.errors import LLMConfigError, LLMDeadlineError, LLMPermanentError, LLMTransientError
from memory.services.stored import StoredOutcome, outcomes_summary, stored_entry_apply
from memory.stored_kinds import StoreContext, is_stored_kind

logger = logging.getLogger(__name__)

#: While the LLM provider keeps failing (429, 5xx, timeouts after the call's own retries), the turn
#: waits instead of failing: first this long, doubling up to LLM_WAIT_MAX_SECONDS, never dropped.
#: Each later try makes a single request (no retries), so a storm costs one request per wait.
LLM_WAIT_FIRST_SECONDS = 60
LLM_WAIT_MAX_SECONDS = 900


#: Kinds that become nodes; `think` and `retrieve` are consumed by the LLM layer, the rest stored here.
CHAIN_KINDS = {k.value for k in NodeKind} - {NodeKind.RECEIVED}


def run_received(node_id: int, owner: str | None = None) -> str:
    """Plan one turn for a claimed `received` node. Returns what happened, for the task log.

    `owner` is the claim token the gateway queued this task with: the task acts only while the node
    is still running under that claim, so a re-delivered task (django-q2 hands out a task again after
    CINDY_Q_RETRY) or a task from a claim that was since reaped and re-claimed makes no LLM call. Tasks
    queued without an owner (by an earlier version) act for whoever holds the node.
    django-q2 closes stale connections around each task, so none is closed here.
    """
    # The brakes read the agent; planning reads the graph and the conversation with its agent.
    node = node_to_plan(node_id=int(node_id))  # plain SQL: conversations/selectors.py
    if node is None or node.status != NodeStatus.RUNNING:
        return f"node {node_id} is no longer running; nothing to do"
    if owner is None:
        owner = node.lease_owner
    elif node.lease_owner != owner:
        return f"node {node_id} is held by another claim now; this task is stale, nothing to do"
    braked = brake_hold(node=node, owner=owner)  # engine/brakes.py: caps and rate limits
    if braked:
        return f"node {node_id}: not planned: {braked}"
    token = task_run_start(node_id=node_id, owner=owner)  # engine/task_deaths.py: deaths are counted
    if not token:
        return f"node {node_id} is held by another claim now; this task is stale, nothing to do"
    try:
        return _plan_and_apply(node_id=node_id, owner=owner, node=node)
    finally:
        task_run_end(node_id=node_id, token=token)


def _plan_and_apply(*, node_id: int, owner: str, node: TaskNode) -> str:
    from engine.voice_render import voice_tasks_render  # imported here: the LLM stack loads only on workers
    from llm.planning import plan_turn, turn_budget_seconds

    deadline = get_clock().monotonic() + turn_budget_seconds()
    try:
        result = plan_turn(node_id=node_id, deadline=deadline, node=node)
        # Speech is LLM work: here, not in the gateway, within the same turn budget.
        voice_tasks_render(node_id=node_id, result=result, deadline=deadline)
    except (LLMConfigError, LLMPermanentError) as exc:
        # No retry would fix it: the node fails once (the graph ends, its queued triggers start) and
        # the message it was for stays in the history, answerable by the next turn.
        outcome = node_fail(node_id=node_id, owner=owner, error=str(exc), permanent=True)
        if outcome == "deleted" and isinstance(exc, LLMConfigError):
            schedule_retry_after_config_error(node_id=node_id)  # a daily planning turn: soon, not a day later
        return f"node {node_id}: {outcome}"
    except LLMTransientError as exc:
        if isinstance(exc, LLMDeadlineError):  # the turn ran out of time: an attempt, as any failure
            return f"node {node_id}: {node_fail(node_id=node_id, owner=owner, error=str(exc))}"
        return f"node {node_id}: {received_wait_for_llm(node_id=node_id, owner=owner, error=str(exc))}"
    except Exception as exc:  # any other failure is transient: the engine retries the node
        logger.exception("planning node %s failed", node_id)
        error = f"{type(exc).__name__}: {exc}"
        return f"node {node_id}: {node_fail(node_id=node_id, owner=owner, error=error)}"
    return received_apply(node_id=node_id, owner=owner, result=result)


def received_wait_for_llm(*, node_id: int, owner: str, error: str) -> str:
    """The provider is down: put the turn back to wait for it, without counting an attempt.

    The chat stays visibly waiting (a `node_deferred` event and an `info` event flagged
    `waiting_for_llm`, the node pending with its next try time); the wait doubles from
    LLM_WAIT_FIRST_SECONDS up to LLM_WAIT_MAX_SECONDS. Returns "waiting" or "lost".
    """
    node = TaskNode.objects.filter(pk=node_id).only("params", "agent_id", "conversation_id").first()
    if node is None:
        return "lost"
    waits = int((node.params or {}).get("llm_waits", 0)) + 1
    delay = min(LLM_WAIT_MAX_SECONDS, LLM_WAIT_FIRST_SECONDS * 2 ** (waits - 1))
    until = now() + dt.timedelta(seconds=delay)
    with transaction.atomic():
        deferred = node_defer(
            node_id=node_id,
            owner=owner,
            until=until,
            reason=f"waiting for the LLM to come back (try {waits + 1} in {delay} s)",
            params={"llm_waits": waits},
        )
        if not deferred:
            return "lost"
        record_event(
            ActivityEvent.Kind.INFO,
            agent_id=node.agent_id,
            conversation_id=node.conversation_id,
            node_id=node_id,
            summary=f"waiting for the LLM to come back: {error}"[:2000],
            data={"waiting_for_llm": True, "llm_waits": waits, "until": until.isoformat()},
        )
    logger.warning("node %s waits %s s for the LLM (wait %s): %s", node_id, delay, waits, error)
    return "waiting"


def received_apply(*, node_id: int, owner: str, result) -> str:
    """Store a plan's immediate kinds and chain the rest, then mark the `received` node done.

    All in one transaction, conditional on still holding the node: a replan or a takeover while the
    LLM was thinking makes this a no-op, so a stale plan never acts.
    """
    with transaction.atomic():
        node = (
            TaskNode.objects.select_for_update()
            .filter(pk=node_id, status=NodeStatus.RUNNING, lease_owner=owner)
            .select_related("conversation", "agent")  # on MariaDB the lock takes their rows too
            .first()
        )
        if node is None:
            return f"node {node_id} was replanned or taken over while planning; plan dropped"
        conversation, agent_id = node.conversation, node.agent_id
        context = StoreContext(
            agent_id=agent_id,
            channel_id=conversation.peer_id,
            channel_name=conversation.title or str(conversation.peer_id),
            channel_username=f"@{conversation.username}" if conversation.username else "",
            topic_id=conversation.topic_id,
        )
        planned: list[PlannedNode] = []
        stored: list[StoredOutcome] = []
        stored_entries: list[dict[str, str]] = []
        errors = list(result.errors)
        notes = list(getattr(result, "notes", []))
        for task in result.tasks:
            if is_stored_kind(task.kind):
                params = dict(task.params)
                if task.params.get("content"):
                    stored_entries.append({"kind": task.kind, "content": task.params["content"]})
                outcome = stored_entry_apply(
                    kind=task.kind,
                    context=context,
                    entry_id=task.id,
                    content=params.pop("content", ""),
                    created=params.pop("created", None),
                    params=params,
                )
                stored.append(outcome)
                if outcome.action == "absent":
                    notes.append(f"{task.kind} {outcome.entry_id}: nothing to delete, no entry has that id")
            elif task.kind in CHAIN_KINDS:
                planned.append(
                    PlannedNode(
                        task.kind,
                        dict(task.params),
                        key=task.id,
                        depends_on=task.depends_on,
                    )
                )
            elif task.kind not in ("think", "retrieve"):
                errors.append(f"task kind {task.kind!r} cannot run; dropped")
        children = graph_append_plan(after=node, nodes=planned)
        refused = list(getattr(result, "refused", []))
        # A reply whose every task was dropped (invalid, not taught, refused) did nothing the model
        # meant to do: the turn is a failure to look at, not a quiet "done".
        all_dropped = bool(errors or refused) and not children and not stored
        node.status = NodeStatus.FAILED if all_dropped else NodeStatus.DONE
        node.finished, node.lease_owner, node.lease_expires_at = now(), "", None
        node.error = _all_dropped_error(errors, refused) if all_dropped else ""
        node.result = {
            "tasks": [c.kind for c in children],
            "stored": [outcome.describe() for outcome in stored],
            "errors": errors,
            "notes": notes,
            # What a provider worked around (not a task adjusted: no event of its own, the calls' own
            # activity lines say it).
            "call_notes": list(getattr(result, "call_notes", [])),
            "llm_call_ids": list(result.llm_call_ids),
            # For the operator's task log: what the agent thought and stored (remember, plan...).
            "think": list(result.thoughts),
            "stored_entries": stored_entries,
            "refused": refused,
        }
        node.save(update_fields=["status", "finished", "lease_owner", "lease_expires_at", "error", "result"])
        summary = ", ".join(c.kind for c in children) or "no actions"
        if stored:  # what the turn wrote, counted per kind (a daily planning turn stores only schedule)
            summary += "; stored " + outcomes_summary(stored)
        # Which route answered: with a fallback chain, the one line that shows a provider was away.
        answered_by = f" (answered by {result.answered_by})" if getattr(result, "answered_by", "") else ""
        if all_dropped:
            summary = "nothing: " + node.error
            logger.warning(
                "node %s (received) of agent %s planned nothing: %s", node.pk, agent_id, node.error
            )
        record_event(
            ActivityEvent.Kind.NODE_FAILED if all_dropped else ActivityEvent.Kind.NODE_DONE,
            agent_id=agent_id,
            conversation_id=conversation.pk,
            node_id=node.pk,
            summary=f"received #{node.pk}: planned {summary}{answered_by}"[:2000],
            data={"kind": node.kind, "graph_id": node.graph_id, **node.result},
        )
        for error in errors:
            record_event(
                ActivityEvent.Kind.INFO,
                agent_id=agent_id,
                conversation_id=conversation.pk,
                node_id=node.pk,
                summary=f"invalid task from the LLM: {error}",
            )
        for note in notes:
            record_event(
                ActivityEvent.Kind.INFO,
                agent_id=agent_id,
                conversation_id=conversation.pk,
                node_id=node.pk,
                summary=f"task adjusted: {note}"[:2000],
                data={"note": note},
            )
        if not children:  # a node just added is pending: the graph goes on
            graph_finish_if_complete(graph_id=node.graph_id)
    return f"node {node_id}: planned {summary}"


def _all_dropped_error(errors: list[str], refused: list[str]) -> str:
    dropped = errors + [f"refused {refusal}" for refusal in refused]
    return f"every task of the reply was dropped ({len(dropped)}): " + "; ".join(dropped)
