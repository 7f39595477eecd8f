"""The policy for privileged task kinds. The LLM asks; this code decides.

- block, unblock and clear-conversation only in direct messages;
- shutdown only when the message that triggered the turn comes from an operator
  (`CINDY_OPERATOR_IDS`, Telegram user ids);
- xsend, event, schedule and send_media as `llm.policy_initiative` says;
- the daily schedule planning turn (trigger `schedule`) only changes the agent's records.

Every refusal is recorded as a `policy_refused` activity event with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from conversations.models import ActivityEvent, Conversation
from conversations.services.activity import record_event
from llm.policy_initiative import initiative_refusal
from llm.tasks import Task
from memory.stored_kinds import is_stored_kind

DM_ONLY = frozenset({"block", "unblock", "clear-conversation"})


@dataclass(frozen=True)
class Refusal:
    task: Task
    reason: str


#: What the daily schedule planning turn may do: change the agent's own records, nothing else.
SCHEDULE_TURN_KINDS = frozenset({"think", "retrieve"})


def refusal_reason(
    task: Task, *, conversation: Conversation, trigger_sender_id: int | None, trigger: str = ""
) -> str:
    """Why `task` may not run here, or "" when it may."""
    if trigger == "schedule" and task.kind not in SCHEDULE_TURN_KINDS and not is_stored_kind(task.kind):
        return f"{task.kind} is not allowed in the schedule planning turn: it only plans, it never acts in a chat"
    if task.kind in DM_ONLY and conversation.kind != Conversation.Kind.DM:
        return f"{task.kind} is only allowed in direct messages, and this is a {conversation.kind}"
    if task.kind == "shutdown":
        operators = set(settings.CINDY_OPERATOR_IDS)
        if trigger_sender_id is None or trigger_sender_id not in operators:
            return (
                f"shutdown needs the triggering message to come from an operator; sender "
                f"{trigger_sender_id} is not in CINDY_OPERATOR_IDS"
            )
    return initiative_refusal(task, conversation=conversation)


def apply_policy(
    tasks: list[Task],
    *,
    conversation: Conversation,
    trigger_sender_id: int | None,
    node_id: int | None = None,
    trigger: str = "",
) -> tuple[list[Task], list[Refusal]]:
    """Split tasks into allowed and refused, recording one activity event per refusal."""
    allowed: list[Task] = []
    refused: list[Refusal] = []
    for task in tasks:
        reason = refusal_reason(
            task, conversation=conversation, trigger_sender_id=trigger_sender_id, trigger=trigger
        )
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
