"""Conversations and their messages, read-only and paged (the gateway's mirror of each chat)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from api.core import DEFAULT_LIMIT, ERRORS, ApiError, Limit, Offset, RowId, page, page_schema, visible_agent
from conversations.models import Conversation, Message

router = Router(tags=["conversations"])
VIEW = "conversations.view_conversation"


class ConversationOut(Schema):
    id: int
    agent_id: int
    peer_id: int
    kind: str
    title: str
    username: str
    muted: bool
    blocked: bool
    gagged: bool
    last_message_at: dt.datetime | None


class MessageOut(Schema):
    message_id: int
    date: dt.datetime
    sender_id: int | None
    sender_name: str
    is_agent: bool
    text: str
    reply_to_id: int | None
    media: list[Any]
    reactions: list[Any]
    edited: bool
    deleted: bool


ConversationPage = page_schema(ConversationOut, "ConversationPage")
MessagePage = page_schema(MessageOut, "MessagePage")


def conversation_row(conversation: Conversation) -> dict[str, Any]:
    return {
        "id": conversation.pk,
        "agent_id": conversation.agent_id,
        "peer_id": conversation.peer_id,
        "kind": conversation.kind,
        "title": conversation.title,
        "username": conversation.username,
        "muted": conversation.muted,
        "blocked": conversation.blocked,
        "gagged": conversation.gagged,
        "last_message_at": conversation.last_message_at,
    }


def message_row(message: Message) -> dict[str, Any]:
    media = message.media if isinstance(message.media, list) else []
    reactions = message.reactions if isinstance(message.reactions, list) else []
    return {
        "message_id": message.message_id,
        "date": message.date,
        "sender_id": message.sender_id,
        "sender_name": message.sender_name,
        "is_agent": message.is_agent,
        "text": message.text,
        "reply_to_id": message.reply_to_id,
        "media": media,
        "reactions": reactions,
        "edited": message.edited,
        "deleted": message.deleted,
    }


def agent_conversation(request: HttpRequest, agent_id: int, conversation_id: int) -> Conversation:
    agent = visible_agent(request, agent_id, VIEW)
    conversation = Conversation.objects.filter(agent=agent, pk=conversation_id).first()
    if conversation is None:
        raise ApiError(
            404,
            f"agent {agent.name} has no conversation {conversation_id}: list them at "
            f"/api/v1/agents/{agent.pk}/conversations",
        )
    return conversation


@router.get(
    "/{agent_id}/conversations",
    response={200: ConversationPage, **ERRORS},
    summary="List an agent's conversations",
)
def conversation_list(
    request: HttpRequest, agent_id: RowId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
):
    agent = visible_agent(request, agent_id, VIEW)
    conversations = Conversation.objects.filter(agent=agent).order_by("id")
    return page(request, conversations, limit=limit, offset=offset, row=conversation_row)


@router.get(
    "/{agent_id}/conversations/{conversation_id}",
    response={200: ConversationOut, **ERRORS},
    summary="Read one conversation",
)
def conversation_read(request: HttpRequest, agent_id: RowId, conversation_id: RowId):
    return conversation_row(agent_conversation(request, agent_id, conversation_id))


@router.get(
    "/{agent_id}/conversations/{conversation_id}/messages",
    response={200: MessagePage, **ERRORS},
    summary="Read a conversation's messages, oldest first",
)
def message_list(
    request: HttpRequest,
    agent_id: RowId,
    conversation_id: RowId,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
):
    conversation = agent_conversation(request, agent_id, conversation_id)
    messages = Message.objects.filter(conversation=conversation).order_by("message_id", "id")
    return page(request, messages, limit=limit, offset=offset, row=message_row)
