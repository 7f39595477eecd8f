"""The policy rules several kinds share (`llm.policy` applies each kind's own).

- `Ordinary`: the kind acts only inside this conversation's ordinary flow and needs no privilege;
- `DirectMessageOnly`: only in direct messages, and not in a turn that read text from outside the chat
  (a web page must not block someone or clear a conversation);
- `OperatorOnly`: only when at least one operator (`CINDY_OPERATOR_IDS`, Telegram user ids) wrote since
  the agent's last turn and every one of those messages, and every message the prompt showed, was
  written by an operator and not forwarded, and the turn read nothing from outside the chat. In a group
  with other members this refuses; operators can ask in a direct message;
- `Initiative`: the checks of `llm.policy_initiative` (nothing after text anybody could have written,
  and event, schedule and send_media nothing after any text from outside the chat; then another
  conversation of the same agent within the hop and hourly limits, the agent's own library, a future
  time, no overlapping schedule entries).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from conversations.models import Conversation
from llm.kinds.base import Policy, Task
from llm.policy_initiative import initiative_refusal, untrusted_refusal
from llm.policy_inputs import MAX_CHECKED_MESSAGES, Source, TurnInputs


@dataclass(frozen=True)
class Ordinary(Policy):
    def needs_inputs(self, task: Task) -> bool:
        return False

    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        return ""


@dataclass(frozen=True)
class DirectMessageOnly(Policy):
    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        conversation = inputs.conversation
        if conversation.kind != Conversation.Kind.DM:
            return f"{task.kind} is only allowed in direct messages, and this is a {conversation.kind}"
        if inputs.outside:
            outside = ", ".join(inputs.outside)
            return f"{task.kind} is not allowed in a turn that read text from outside the chat ({outside})"
        return ""


@dataclass(frozen=True)
class OperatorOnly(Policy):
    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        operators = set(settings.CINDY_OPERATOR_IDS)
        rule = (
            f"{task.kind} needs every message since the agent's last turn, and every message its prompt "
            "showed, to come from an operator (CINDY_OPERATOR_IDS)"
        )
        if inputs.outside:
            return f"{rule} and nothing from outside the chat; this turn read {', '.join(inputs.outside)}"
        if inputs.too_many:
            return f"{rule}; more than {MAX_CHECKED_MESSAGES} messages arrived since the agent's last turn"
        if not inputs.since_last_turn:
            return f"{rule}; no one has written since the agent's last turn"
        offender = _not_from_an_operator((*inputs.since_last_turn, *inputs.shown), operators)
        return f"{rule}: {offender}" if offender else ""


def _not_from_an_operator(sources: Iterable[Source], operators: set[int]) -> str:
    for source in sources:
        if source.forwarded_from:
            return f"{source.describe()} is forwarded from {source.forwarded_from}"
        if source.sender_id is None or source.sender_id not in operators:
            return f"{source.describe()} is not from an operator"
    return ""


@dataclass(frozen=True)
class Initiative(Policy):
    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        return untrusted_refusal(
            task, outside=inputs.outside, untrusted=inputs.untrusted
        ) or initiative_refusal(
            task, conversation=inputs.conversation, xsend_depth=inputs.xsend_depth, earlier=earlier
        )
