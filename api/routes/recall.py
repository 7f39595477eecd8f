"""Searching an agent's past: `GET /agents/{id}/recall?q=...` over the recall index (recall/)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from django.http import HttpRequest
from ninja import Field, Router, Schema

from api.core import ERRORS, ApiError, RowId, visible_agent
from conversations.models import Conversation
from recall.access import refusal, searchable_kinds
from recall.selectors import MAX_LIMIT, MAX_QUERY_CHARS, RecallQueryError, recall_search

router = Router(tags=["recall"])


class HitOut(Schema):
    kind: str = Field(description="message, summary, memory, note, intention, plan or document")
    conversation_id: int | None = Field(description="The conversation it belongs to; null: global")
    message_id: int | None = Field(description="The Telegram message id, for a message")
    date: dt.datetime
    text: str
    score: float = Field(description="Relevance (higher is better), comparable within one answer")


class RecallOut(Schema):
    items: list[HitOut]


Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="Words to look for")]
HitLimit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"Hits to return, 1 to {MAX_LIMIT}")]


@router.get(
    "/{agent_id}/recall",
    response={200: RecallOut, **ERRORS},
    summary="Search an agent's past, best hits first",
    description=(
        "Messages, summaries, memories, notes, intentions, plans and document sections of the agent. "
        "With `conversation`: as that conversation recalls, its own entries and the agent's global "
        "ones, never another conversation's. Only the kinds of entry you may view are searched."
    ),
)
def recall(
    request: HttpRequest,
    agent_id: RowId,
    q: Query,
    conversation: RowId | None = None,
    limit: HitLimit = 10,
):
    agent = visible_agent(request, agent_id)
    kinds = searchable_kinds(request.user, agent)
    if not kinds:
        raise ApiError(403, refusal(request.user, agent))
    chat = None
    if conversation is not None:
        chat = Conversation.objects.filter(agent=agent, pk=conversation).first()
        if chat is None:
            raise ApiError(
                404,
                f"agent {agent.name} has no conversation {conversation}: list them at "
                f"/api/v1/agents/{agent.pk}/conversations",
                field="conversation",
            )
    try:
        hits = recall_search(agent_id=agent.pk, query=q, conversation=chat, limit=limit, kinds=kinds)
    except RecallQueryError as error:
        raise ApiError(422, str(error), field=error.field) from error
    return {"items": [hit.as_json() for hit in hits]}
