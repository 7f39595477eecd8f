"""A conversation as an operator reads it: messages interleaved with the agent's task log.

The log comes from the conversation's task nodes: each `received` node shows what the agent thought,
which pages it retrieved (the graph's context), what it stored (remember, plan and the other stored
kinds) and what it planned; each action
node shows what it did. Operator cancellations and policy refusals come from the activity stream.
Entries are plain dicts for the templates (which escape everything) and the Markdown export.
"""

from __future__ import annotations

import base64
import datetime as dt
import mimetypes
from pathlib import Path
from typing import Any

from django.conf import settings

from conversations.models import ActivityEvent, Conversation, Message, NodeKind, TaskGraph, TaskNode
from llm.conversation import agent_timezone, descriptions_for, render_media
from media_catalog.parts import StoredMedia, media_items
from memory.services.stored import StoredOutcome, outcomes_summary

#: How many of the newest messages the log page shows (downloads take the whole conversation).
LOG_LIMIT = 500
SINCE_MARGIN = dt.timedelta(minutes=10)
#: Images above this size are left out of downloads (named, not embedded).
MAX_EMBED_BYTES = 5_000_000
_IMAGE_MIMES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_LOGGED_EVENTS = (
    ActivityEvent.Kind.WORK_CANCELLED,
    ActivityEvent.Kind.POLICY_REFUSED,
    ActivityEvent.Kind.GRAPH_DELETED,
)


def image_data_uri(part: StoredMedia) -> str:
    """A data: URI for a stored image part (photos, static stickers), or "" when there is none."""
    relative = part.file
    if not relative:
        return ""
    root = Path(settings.MEDIA_ROOT).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root) or not path.is_file() or path.stat().st_size > MAX_EMBED_BYTES:
        return ""
    mime = (part.mime or mimetypes.guess_type(path.name)[0] or "").lower()
    if mime not in _IMAGE_MIMES:
        return ""
    return f"data:{mime};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"


def _messages(conversation: Conversation, limit: int | None) -> list[Message]:
    rows = Message.objects.filter(conversation=conversation).order_by("-message_id")
    newest = list(rows[:limit] if limit else rows)
    newest.sort(key=lambda m: (m.date, m.message_id))
    return newest


def _message_entry(
    message: Message,
    conversation: Conversation,
    descriptions: dict,
    embed: bool,
    translations: dict[int, str],
) -> dict[str, Any]:
    media = []
    for part in media_items(message.media):
        media.append(
            {
                "label": render_media(part, descriptions.get(part.unique_id)),
                "data_uri": image_data_uri(part) if embed else "",
                "unique_id": part.unique_id,
                "media_kind": part.media_kind,
            }
        )
    who = (
        conversation.agent.name
        if message.is_agent
        else (message.sender_name or str(message.sender_id or "?"))
    )
    return {
        "type": "message",
        "when": message.date,
        "message_id": message.message_id,
        "who": who,
        "is_agent": message.is_agent,
        "text": message.text,
        "translation": translations.get(message.message_id, ""),
        "reply_to_id": message.reply_to_id,
        "edited": message.edited,
        "deleted": message.deleted,
        "media": media,
    }


def action_text(node: TaskNode) -> str:
    params = node.params or {}
    if node.kind == NodeKind.SEND:
        return params.get("text", "")
    if node.kind == NodeKind.STICKER:
        return " · ".join(str(params[k]) for k in ("sticker_set", "name") if params.get(k))
    if node.kind == NodeKind.REACT:
        return f"{params.get('emoji', '')} on #{params.get('message_id', '?')}"
    if node.kind == NodeKind.WAIT:
        return f"{params.get('delay', '?')} s"
    if node.kind == NodeKind.IMAGE:  # the picture's description, and its caption
        return " · ".join(str(params[k]) for k in ("description", "caption") if params.get(k))
    return ""


def trigger_text(graph: TaskGraph, sources: dict[int, Conversation] | None = None) -> str:
    """What started a turn, as the log reads it: the message it answers, or the trigger's payload
    (the event's intent, the nudge's operator and intent, the chat an xsend came from)."""
    label = graph.get_trigger_display() or "Turn"
    context = graph.context or {}
    if graph.target_message_id is not None:
        return f"{label} on #{graph.target_message_id}"
    if graph.trigger == TaskGraph.Trigger.EVENT:
        event = context.get("event") or {}
        return f"{label} {event.get('id', '')}: {event.get('intent') or '(no intent)'}".replace(" :", ":")
    if graph.trigger == TaskGraph.Trigger.NUDGE:
        by = f" by {context['operator']}" if context.get("operator") else ""
        return f"{label}{by}: {context.get('xsend') or '(no intent: continue on its own)'}"
    if graph.trigger == TaskGraph.Trigger.XSEND:
        source = (sources or {}).get(context.get("xsend_from"))
        origin = source.display_title if source is not None else context.get("xsend_from", "another chat")
        return f"{label} from {origin}: {context.get('xsend', '')}"
    if graph.trigger == TaskGraph.Trigger.CONSOLIDATE:
        news = context.get("consolidate") or {}
        if news.get("first") is None:
            return label
        return f"{label}: messages #{news['first']} to #{news['last']} ({news.get('count', '?')})"
    if graph.trigger == TaskGraph.Trigger.SCHEDULE:
        through = str((context.get("schedule") or {}).get("through", ""))[:10]
        return f"{label} through {through}" if through else label
    return label


def _xsend_sources(conversation: Conversation, nodes: list[TaskNode]) -> dict[int, Conversation]:
    """The chats the xsend turns among `nodes` came from, by peer id (one query)."""
    peers = {
        (n.graph.context or {}).get("xsend_from")
        for n in nodes
        if n.kind == NodeKind.RECEIVED and n.graph.trigger == TaskGraph.Trigger.XSEND
    } - {None}
    if not peers:
        return {}
    rows = Conversation.objects.filter(agent_id=conversation.agent_id, peer_id__in=peers).select_related(
        "agent"
    )
    return {row.peer_id: row for row in rows}


def _node_entry(node: TaskNode, sources: dict[int, Conversation]) -> dict[str, Any]:
    when = node.finished or node.started or node.created
    entry: dict[str, Any] = {
        "type": "task",
        "when": when,
        "node_id": node.pk,
        "kind": node.kind,
        "status": node.status,
        "text": action_text(node),
        "error": node.error,
        "lines": [],
    }
    if node.kind == NodeKind.RECEIVED:
        result = node.result or {}
        entry["text"] = trigger_text(node.graph, sources)
        lines = entry["lines"]
        lines += [("think", text) for text in result.get("think", [])]
        lines += [
            ("retrieve", page.get("url", "")) for page in (node.graph.context or {}).get("retrieved", [])
        ]
        lines += [(entry["kind"], entry["content"]) for entry in result.get("stored_entries", [])]
        planned = ", ".join(result.get("tasks", [])) or ("no actions" if node.status == "done" else "")
        if planned and result.get("stored"):  # as the activity line counts them (memory.services.stored)
            stored = outcomes_summary(StoredOutcome.from_text(text) for text in result["stored"])
            planned += f"; stored {stored}"
        if planned:
            lines.append(("planned", planned))
        lines += [("problem", text) for text in result.get("errors", [])]
    return entry


def _event_entry(event: ActivityEvent) -> dict[str, Any]:
    return {
        "type": "task",
        "when": event.created,
        "node_id": event.node_id,
        "kind": event.kind,
        "status": event.get_kind_display(),
        "text": event.summary,
        "error": "",
        "lines": [],
    }


def conversation_transcript(
    conversation: Conversation,
    *,
    limit: int | None = LOG_LIMIT,
    embed_media: bool = False,
    translations: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Messages and task-log entries of the conversation in time order (a fixed number of queries)."""
    messages = _messages(conversation, limit)
    descriptions = descriptions_for(messages)
    entries = [
        _message_entry(m, conversation, descriptions, embed_media, translations or {}) for m in messages
    ]
    # The log covers the shown messages; a margin keeps the turn that answered the first of them
    # even when Telegram's message date and this machine's clock differ a little.
    since = messages[0].date - SINCE_MARGIN if messages and limit else None
    nodes = TaskNode.objects.filter(conversation=conversation).select_related("graph")
    events = ActivityEvent.objects.filter(conversation=conversation, kind__in=_LOGGED_EVENTS)
    if since is not None:
        nodes = nodes.filter(created__gte=since)
        events = events.filter(created__gte=since)
    nodes = list(nodes.order_by("id"))
    sources = _xsend_sources(conversation, nodes)
    entries += [_node_entry(node, sources) for node in nodes]
    entries += [_event_entry(event) for event in events.order_by("id")]
    tz = agent_timezone(conversation.agent)
    entries.sort(key=lambda e: (e["when"], 0 if e["type"] == "message" else 1))
    for entry in entries:
        entry["local_time"] = entry["when"].astimezone(tz).strftime("%Y-%m-%d %H:%M:%S")
    return entries


def transcript_times(entries: list[dict[str, Any]]) -> tuple[dt.datetime | None, dt.datetime | None]:
    messages = [e["when"] for e in entries if e["type"] == "message"]
    return (messages[0], messages[-1]) if messages else (None, None)
