"""Where an imported chat history lands for an agent on the sandbox transport.

A sandbox agent has no Telegram peer for the chat of an export, so the sandbox plays that part: a
personal chat becomes the DM between the agent and a sandbox person (or bot) named as the chat, a
group the sandbox group of that title. The imported messages go to the agent's mirror only, under
their own ids; the sandbox chat then numbers its next messages after the highest imported id, so a
message written in the sandbox later never takes an imported message's id.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agents.models import Agent
from sandbox.models import SandboxChat, SandboxMessage
from sandbox.services.chats import (
    SandboxError,
    sandbox_dm_between,
    sandbox_group,
    sandbox_person,
    sandbox_user_for_agent,
)


@dataclass(frozen=True)
class SandboxImportTarget:
    """The sandbox chat an import writes for, and the peer id the agent's conversation has there."""

    chat: SandboxChat
    peer_id: int
    #: The agent's own sandbox user id (the sender of its own messages).
    agent_user_id: int


def sandbox_import_target(
    *, agent: Agent, name: str, group: bool = False, bot: bool = False
) -> SandboxImportTarget:
    """The sandbox chat an imported history of `name` belongs to, created on first use: the DM with the
    person (a bot with `bot`) named `name`, or with `group` the group titled `name`."""
    me = sandbox_user_for_agent(agent=agent)
    if group:
        chat = sandbox_group(title=name, members=[me])
        return SandboxImportTarget(chat=chat, peer_id=chat.peer_id, agent_user_id=me.user_id)
    person = sandbox_person(name=name, bot=bot)
    chat = sandbox_dm_between(a=me, b=person)
    return SandboxImportTarget(chat=chat, peer_id=person.user_id, agent_user_id=me.user_id)


def sandbox_import_check_ids(*, target: SandboxImportTarget, first_id: int, last_id: int) -> None:
    """Refuse an import whose ids overlap messages written in the sandbox chat itself: both would
    claim the same ids in the agent's mirror."""
    written = SandboxMessage.objects.filter(
        chat=target.chat, message_id__gte=first_id, message_id__lte=last_id
    )
    ids = sorted(written.values_list("message_id", flat=True)[:3])
    if ids:
        shown = ", ".join(f"#{i}" for i in ids)
        raise SandboxError(
            f"the sandbox chat {target.chat} already has messages written in the sandbox ({shown}, ...) "
            f"among the export's ids #{first_id} to #{last_id}: import under another name (--name NAME) "
            "or into an agent that has not chatted there"
        )


def sandbox_import_reserve_ids(*, target: SandboxImportTarget, last_id: int) -> None:
    """Number the chat's next sandbox message after `last_id`."""
    with transaction.atomic():
        SandboxChat.objects.filter(pk=target.chat.pk, next_message_id__lte=last_id).update(
            next_message_id=last_id + 1
        )
