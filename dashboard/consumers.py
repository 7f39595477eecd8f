"""The dashboard socket (`/ws/dashboard/`), also used by the sandbox chat page.

Protocol. The browser sends one `hello` after connecting:
    {"type": "hello", "last_event_id": 123, "sandbox_chat_id": 7 | null}
and receives, in order: the events it missed (`event`, oldest first), a full `snapshot`, and, when
it asked for a sandbox chat, that chat's `sandbox_history`. After that the relay pushes `event`,
`conversation`, `agents`, `usage`, `sandbox_message` and `sandbox_typing` messages as they happen.
The catch-up repeats a few events below `last_event_id` (`CATCHUP_OVERLAP`): ids become visible in
commit order, not id order, so one may have appeared below the browser's newest id; the browser
drops ids it already shows and inserts the others in order. When more than `EVENT_LIMIT` events were
missed, the socket sends one `events_reset` with the newest ones instead, and the browser replaces
its list (the `snapshot` that follows replaces everything else).

Access is checked at connect and again on every `hello` and, at most every
`AUTH_RECHECK_SECONDS` (injected clock), when the relay delivers or ticks: once the session is
logged out, the user is no longer active staff, or the OTP device is deleted or unconfirmed, the
socket closes with 4403.

A socket only carries what its user may see (`agents.access`): the agents, conversations, events and
usage of the agents granted to them, and only sandbox chats whose every agent is one of those (a group
shared with an agent beyond their grants is refused as if it did not exist). The set is read at
connect and again on every access check, so a grant taken away (or such an agent joining the chat
followed) stops the stream within `AUTH_RECHECK_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model

from agents.access import keep_rows, visible_agent_ids
from cindy_site.clock import get_clock
from dashboard import selectors
from dashboard.access import socket_session_still_verified, socket_user_is_verified
from dashboard.origin import CLOSE_NOT_ALLOWED
from dashboard.relay import dashboard_group, relay_subscribe, relay_unsubscribe, sandbox_group
from sandbox.models import SandboxChat

__all__ = ["CLOSE_NOT_ALLOWED", "DashboardConsumer"]

#: How long a socket trusts its last access check while the relay delivers.
AUTH_RECHECK_SECONDS = 10.0
#: How many events below the browser's last id the catch-up repeats (see the module docstring).
CATCHUP_OVERLAP = 50


def _full_snapshot(agent_ids: Collection[int] | None) -> dict[str, Any]:
    return {
        "type": "snapshot",
        "agents": selectors.agent_rows(agent_ids=agent_ids),
        "usage": selectors.llm_usage_today(agent_ids=agent_ids),
        "conversations": selectors.conversation_rows(agent_ids=agent_ids),
        "last_event_id": selectors.last_event_id(),
    }


def _catch_up(last_event_id: int, agent_ids: Collection[int] | None) -> dict[str, Any]:
    """The events a reconnecting browser missed, or a reset to the newest ones if too many were."""
    after = max(0, last_event_id - CATCHUP_OVERLAP)
    limit = selectors.EVENT_LIMIT
    events = selectors.events_after(after_id=after, limit=limit + 1, agent_ids=agent_ids)
    if len(events) <= limit:
        return {"events": events, "reset": False}
    return {"events": selectors.recent_events(limit=limit, agent_ids=agent_ids), "reset": True}


def _chat_visible(chat_id: int, agent_ids: Collection[int] | None) -> bool:
    """Whether the chat exists with at least one agent in it and every agent in it is one the user
    may see: a group shared with an agent beyond their grants is not followed."""
    if not SandboxChat.objects.filter(pk=chat_id).exists():
        return False
    if agent_ids is None:
        return True
    in_chat = selectors.sandbox_chat_agent_ids(chat_id=chat_id)
    return bool(in_chat) and in_chat <= set(agent_ids)


def _agent_ids_of(user_pk: Any) -> frozenset[int] | None:
    """What the user may see now (their grants and roles may have changed since the last check)."""
    user = get_user_model().objects.filter(pk=user_pk).first()
    return visible_agent_ids(user) if user is not None else frozenset()


class DashboardConsumer(AsyncJsonWebsocketConsumer):
    sandbox_chat_id: int | None = None
    subscribed = False
    refused = False
    user_pk: Any = None
    session_key: str | None = None
    checked_at = 0.0
    #: The agents this socket's user may see (None: every agent); see the module docstring.
    agent_ids: frozenset[int] | None = frozenset()

    async def connect(self) -> None:
        # Origins are checked by dashboard.origin.SameOriginValidator before this runs.
        if not await database_sync_to_async(socket_user_is_verified)(self.scope):
            self.refused = True
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.user_pk = self.scope["user"].pk
        self.session_key = self.scope["session"].session_key
        self.agent_ids = await database_sync_to_async(_agent_ids_of)(self.user_pk)
        self.checked_at = get_clock().monotonic()
        await self.channel_layer.group_add(dashboard_group(), self.channel_name)
        # Counted before the wait for the relay's start, so that a socket closed meanwhile is
        # counted off again by `_leave`.
        self.subscribed = True
        await relay_subscribe()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self._leave()

    async def _leave(self) -> None:
        if not self.subscribed:
            return
        self.subscribed = False
        await self.channel_layer.group_discard(dashboard_group(), self.channel_name)
        if self.sandbox_chat_id is not None:
            await self.channel_layer.group_discard(sandbox_group(self.sandbox_chat_id), self.channel_name)
        await relay_unsubscribe()

    async def _still_allowed(self, *, force: bool = False) -> bool:
        """Re-check access (always when `force`, else at most every AUTH_RECHECK_SECONDS); close
        the socket with 4403 when it no longer holds."""
        if self.refused:
            return False
        at = get_clock().monotonic()
        if not force and at - self.checked_at < AUTH_RECHECK_SECONDS:
            return True
        allowed = await database_sync_to_async(socket_session_still_verified)(
            session_key=self.session_key, user_pk=self.user_pk
        )
        if allowed:
            self.agent_ids = await database_sync_to_async(_agent_ids_of)(self.user_pk)
            await self._drop_chat_beyond_grants()
        self.checked_at = at
        if not allowed:
            self.refused = True
            await self._leave()
            await self.close(code=CLOSE_NOT_ALLOWED)
        return allowed

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if not await self._still_allowed(force=True):
            return
        if not isinstance(content, dict) or content.get("type") != "hello":
            await self.send_json({"type": "error", "error": 'expected {"type": "hello", ...}'})
            return
        try:
            last_event_id = int(content.get("last_event_id") or 0)
            chat_id = content.get("sandbox_chat_id")
            chat_id = int(chat_id) if chat_id not in (None, "") else None
        except (TypeError, ValueError):
            await self.send_json(
                {"type": "error", "error": "last_event_id and sandbox_chat_id must be integers"}
            )
            return
        if last_event_id > 0:
            missed = await database_sync_to_async(_catch_up)(last_event_id, self.agent_ids)
            if missed["reset"]:
                await self.send_json({"type": "events_reset", "events": missed["events"]})
            else:
                for event in missed["events"]:
                    await self.send_json({"type": "event", "event": event})
        await self.send_json(await database_sync_to_async(_full_snapshot)(self.agent_ids))
        if chat_id is not None:
            await self._follow_sandbox_chat(chat_id)

    async def _drop_chat_beyond_grants(self) -> None:
        """Stop following the sandbox chat once it is no longer visible (a grant taken away, or an
        agent beyond the grants added to the group)."""
        chat_id = self.sandbox_chat_id
        if chat_id is None or await database_sync_to_async(_chat_visible)(chat_id, self.agent_ids):
            return
        self.sandbox_chat_id = None
        await self.channel_layer.group_discard(sandbox_group(chat_id), self.channel_name)

    async def _follow_sandbox_chat(self, chat_id: int) -> None:
        if not await database_sync_to_async(_chat_visible)(chat_id, self.agent_ids):
            await self.send_json({"type": "error", "error": f"sandbox chat {chat_id} does not exist"})
            return
        if self.sandbox_chat_id is not None and self.sandbox_chat_id != chat_id:
            await self.channel_layer.group_discard(sandbox_group(self.sandbox_chat_id), self.channel_name)
        self.sandbox_chat_id = chat_id
        await self.channel_layer.group_add(sandbox_group(chat_id), self.channel_name)
        messages = await database_sync_to_async(selectors.sandbox_messages)(chat_id=chat_id)
        typing = await database_sync_to_async(selectors.sandbox_typing)(chat_id=chat_id)
        await self.send_json(
            {"type": "sandbox_history", "chat_id": chat_id, "messages": messages, "typing": typing}
        )

    # --- Relay messages ---------------------------------------------------------------------
    # Each delivery first re-checks access (at most every AUTH_RECHECK_SECONDS); `relay.recheck`
    # is the relay's periodic tick, so an idle socket is re-checked too.

    async def relay_recheck(self, message: dict[str, Any]) -> None:
        await self._still_allowed()

    def _sees(self, agent_id: int | None) -> bool:
        return self.agent_ids is None or agent_id in self.agent_ids

    async def relay_event(self, message: dict[str, Any]) -> None:
        if await self._still_allowed() and self._sees(message["event"].get("agent_id")):
            await self.send_json({"type": "event", "event": message["event"]})

    async def relay_conversation(self, message: dict[str, Any]) -> None:
        if await self._still_allowed() and self._sees(message["conversation"].get("agent_id")):
            await self.send_json({"type": "conversation", "conversation": message["conversation"]})

    async def relay_usage(self, message: dict[str, Any]) -> None:
        if await self._still_allowed():
            await self.send_json({"type": "usage", "usage": keep_rows(message["usage"], self.agent_ids)})

    async def relay_agents(self, message: dict[str, Any]) -> None:
        if await self._still_allowed():
            agents = keep_rows(message["agents"], self.agent_ids, key="id")
            await self.send_json({"type": "agents", "agents": agents})

    async def relay_sandbox_message(self, message: dict[str, Any]) -> None:
        if await self._still_allowed():
            await self.send_json({"type": "sandbox_message", "message": message["message"]})

    async def relay_sandbox_typing(self, message: dict[str, Any]) -> None:
        if await self._still_allowed():
            await self.send_json(
                {"type": "sandbox_typing", "chat_id": message["chat_id"], "typing": message["typing"]}
            )
