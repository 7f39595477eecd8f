"""The stored kinds (`memory.stored_kinds`: remember, plan, note, ...) as task kinds, by one shared rule.

Validation: `content` (or the kind's own content field; empty deletes and then needs the `id`),
`created` (optional date or date-time) and the kind's declared extra fields.

Policy: a stored kind changes only the agent's own records, so it is allowed, also in the daily
schedule planning turn (and, unless its declaration says otherwise, in a consolidation turn); but a kind shared by all of the agent's chats (global memories, intentions)
may update or delete by id only an entry this conversation created, unless the partner is an operator
(a direct message with one of `CINDY_OPERATOR_IDS`): a stranger cannot have the agent rewrite what
another chat stored (the prompt shows such entries without ids, `llm.prompt.sections.stored_sections`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from llm.kinds.base import INTEGER, STRING, LegacyReader, Policy, Task, TaskKind
from llm.policy_inputs import TurnInputs, partner_is_operator
from llm.task_fields import TaskError, clean_text, optional_text, short_repr, task_id_of
from memory.services.stored import stored_entry_foreign
from memory.stored_kinds import StoreContext, StoredKind


def validate(spec: StoredKind, raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    content = next((text for name in spec.content_names if (text := optional_text(raw, name, notes))), "")
    if not content.strip() and task_id_of(raw) is None:
        name = spec.content_names[0]
        raise TaskError(
            f'"{name}" is missing or empty: write what to store (empty {name} needs an "id" to delete)'
        )
    created = raw.get("created")
    if created is not None and not isinstance(created, str | int | float):
        raise TaskError(f'"created" is {short_repr(created)}: give an ISO 8601 date or date-time')
    params: dict[str, Any] = {"content": content}
    if created not in (None, ""):
        params["created"] = str(created)[:64]
    for param in spec.params:
        value = raw.get(param.name)
        if value is None:
            continue
        if param.type == "int":
            if isinstance(value, bool) or not (
                isinstance(value, int) or str(value).strip().lstrip("-").isdigit()
            ):
                raise TaskError(f'"{param.name}" is {short_repr(value)}: it must be a whole number')
            value = int(str(value).strip()[:20])
        elif not isinstance(value, str):
            raise TaskError(f'"{param.name}" is {type(value).__name__}: it must be text')
        else:
            value = clean_text(value, notes, f'"{param.name}"')
        params[param.name] = value
    return params


@dataclass(frozen=True, kw_only=True)
class StoredPolicy(Policy):
    spec: StoredKind
    in_schedule_turn: bool = True

    def needs_inputs(self, task: Task) -> bool:
        """Only a task that names an entry of a kind all the agent's chats share is checked (by owner)."""
        return bool(task.id and self.spec.owner_field)

    def refusal(self, task: Task, *, inputs: TurnInputs, earlier: int) -> str:
        conversation = inputs.conversation
        if not task.id or partner_is_operator(conversation):
            return ""
        context = StoreContext(
            agent_id=conversation.agent_id, channel_id=conversation.peer_id, topic_id=conversation.topic_id
        )
        return stored_entry_foreign(kind=task.kind, context=context, entry_id=task.id)


def stored_fields(spec: StoredKind) -> dict[str, dict[str, Any]]:
    """The reply-schema properties of a stored kind: its content field, `created`, its extra fields."""
    fields = {spec.content_names[0]: STRING, "created": STRING}
    for param in spec.params:
        fields.setdefault(param.name, INTEGER if param.type == "int" else STRING)
    return fields


def stored_task_kind(
    spec: StoredKind, policy: Policy | None = None, read_legacy: LegacyReader | None = None
) -> TaskKind:
    """The task kind of a stored kind: the shared validation, `policy` (the shared one by default),
    and how its legacy Markdown block reads (none by default: the bare kind)."""
    return TaskKind(
        name=spec.kind,
        validate=partial(validate, spec),
        policy=policy or StoredPolicy(spec=spec, in_consolidation_turn=spec.in_consolidation),
        runs="stored",
        fields=stored_fields(spec),
        read_legacy=read_legacy,
    )
