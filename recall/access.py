"""Who may find what in the recall index: a hit is the record's text, so whoever may not read the
record may not find it either. The API and the dashboard's search ask the same question here."""

from __future__ import annotations

from typing import Any

from agents.access import has_agent_perm
from agents.models import Agent
from recall.models import EntryKind

#: The permission that shows each kind of entry.
KIND_PERMS = {
    EntryKind.MESSAGE: "conversations.view_conversation",
    EntryKind.SUMMARY: "memory.view_summary",
    EntryKind.MEMORY: "memory.view_memory",
    EntryKind.NOTE: "memory.view_note",
    EntryKind.INTENTION: "memory.view_intention",
    EntryKind.PLAN: "memory.view_plan",
    EntryKind.DOCUMENT: "agents.view_agentdocument",
}


def searchable_kinds(user: Any, agent: Agent) -> set[str]:
    """The kinds of entry `user` may find on `agent` (empty: none; search nothing)."""
    return {kind for kind, perm in KIND_PERMS.items() if has_agent_perm(user, perm, agent)}


def refusal(user: Any, agent: Agent) -> str:
    """Why `user`, who may find no kind of entry on `agent`, gets no search at all."""
    return (
        f"{user.get_username()} may view none of what recall searches on agent {agent.name}: "
        f"it needs one of {', '.join(sorted(KIND_PERMS.values()))}"
    )
