"""Admin actions on the work queue: cancel conversations' graphs, single nodes, or an agent's work.

They are added to the admins registered elsewhere (conversations, nodes, agents) so that the
`agents` app keeps knowing nothing about conversations; each calls conversations/services/work_queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from agents.models import Agent
from conversations.models import Conversation, TaskNode
from conversations.services.curation import conversation_gag
from conversations.services.work_queue import (
    WorkQueueError,
    agent_pending_work_delete,
    graph_cancel,
    node_cancel,
)

T = TypeVar("T")


def _each(request: HttpRequest, items: Iterable[T], cancel: Callable[[T], str]) -> None:
    """Run `cancel` on every item; one message lists what was done, another what was refused and why."""
    done, refused = [], []
    for item in items:
        try:
            done.append(cancel(item))
        except WorkQueueError as exc:
            refused.append(str(exc))
    if done:
        messages.success(request, "; ".join(done))
    if refused:
        messages.warning(request, "; ".join(refused))


@admin.action(description="Cancel pending work of the selected conversations", permissions=["change"])
def cancel_conversation_work(modeladmin, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
    by = request.user.get_username()
    _each(
        request,
        queryset.select_related("agent"),
        lambda c: f"{c}: {graph_cancel(conversation=c, by=by)} node(s) cancelled",
    )


@admin.action(description="Gag the selected conversations (record, do not act)", permissions=["change"])
def gag_conversations(modeladmin, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
    for conversation in queryset:
        conversation_gag(conversation=conversation, gagged=True, by=request.user.get_username())
    messages.success(request, f"{queryset.count()} conversation(s) gagged")


@admin.action(description="Ungag the selected conversations", permissions=["change"])
def ungag_conversations(modeladmin, request: HttpRequest, queryset: QuerySet[Conversation]) -> None:
    for conversation in queryset:
        conversation_gag(conversation=conversation, gagged=False, by=request.user.get_username())
    messages.success(request, f"{queryset.count()} conversation(s) ungagged")


@admin.action(description="Cancel the selected pending nodes", permissions=["operate"])
def cancel_nodes(modeladmin, request: HttpRequest, queryset: QuerySet[TaskNode]) -> None:
    by = request.user.get_username()

    def cancel(node_id: int) -> str:
        node = node_cancel(node_id=node_id, by=by)
        return f"{node.kind} #{node.pk} cancelled"

    _each(request, queryset.values_list("pk", flat=True), cancel)


@admin.action(description="Delete all pending work of the selected agents", permissions=["change"])
def delete_agent_work(modeladmin, request: HttpRequest, queryset: QuerySet[Agent]) -> None:
    by = request.user.get_username()
    _each(
        request,
        queryset,
        lambda a: f"{a.name}: {agent_pending_work_delete(agent=a, by=by)} graph(s) cancelled",
    )


def register_work_queue_actions() -> None:
    """Add the actions to the registered admins (agents' admin is loaded before this one)."""
    for model, actions in (
        (Conversation, [cancel_conversation_work, gag_conversations, ungag_conversations]),
        (TaskNode, [cancel_nodes]),
        (Agent, [delete_agent_work]),
    ):
        model_admin = admin.site.get_model_admin(model)
        model_admin.actions = [*(model_admin.actions or []), *actions]
