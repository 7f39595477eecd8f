"""The dashboard socket (`/ws/dashboard/`), also used by the sandbox chat page.

Protocol. The browser sends one `hello` after connecting:
    {"type": "hello", "last_event_id": 123, "sandbox_chat_id": 7 | null}
and receives, in order: the events it missed (`event`, oldest first), a full `snapshot`, and, when
it asked for a sandbox chat, that chat's `sandbox_history`. After that the relay pushes `event`,
`conversation`, `agents`, `usage`, `sandbox_message` and `sandbox_typing` messages as they happen.
Event ids only grow, so the browser drops any event at or below the last id it has shown.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from conversations.models import SandboxChat
from dashboard import selectors
from dashboard.access import socket_user_is_verified
from dashboard.relay import dashboard_group, relay_subscribe, relay_unsubscribe, sandbox_group

#: Close codes the browser shows as reasons (4000-4999 are free for applications).
CLOSE_NOT_ALLOWED = 4403


def _full_snapshot() -> dict[str, Any]:
    return {
        "type": "snapshot",
        "agents": selectors.agent_rows(),
        "usage": selectors.llm_usage_today(),
        "conversations": selectors.conversation_rows(),
        "last_event_id": selectors.last_event_id(),
    }


def _chat_exists(chat_id: int) -> bool:
    return SandboxChat.objects.filter(pk=chat_id).exists()


class DashboardConsumer(AsyncJsonWebsocketConsumer):
    sandbox_chat_id: int | None = None
    subscribed = False

    async def connect(self) -> None:
        # Origins are checked by AllowedHostsOriginValidator before this runs.
        if not await database_sync_to_async(socket_user_is_verified)(self.scope):
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        await self.channel_layer.group_add(dashboard_group(), self.channel_name)
        await relay_subscribe()
        self.subscribed = True
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if not self.subscribed:
            return
        self.subscribed = False
        await self.channel_layer.group_discard(dashboard_group(), self.channel_name)
        if self.sandbox_chat_id is not None:
            await self.channel_layer.group_discard(sandbox_group(self.sandbox_chat_id), self.channel_name)
        await relay_unsubscribe()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
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
            for event in await database_sync_to_async(selectors.events_after)(after_id=last_event_id):
                await self.send_json({"type": "event", "event": event})
        await self.send_json(await database_sync_to_async(_full_snapshot)())
        if chat_id is not None:
            await self._follow_sandbox_chat(chat_id)

    async def _follow_sandbox_chat(self, chat_id: int) -> None:
        if not await database_sync_to_async(_chat_exists)(chat_id):
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

    async def relay_event(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "event", "event": message["event"]})

    async def relay_conversation(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "conversation", "conversation": message["conversation"]})

    async def relay_usage(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "usage", "usage": message["usage"]})

    async def relay_agents(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "agents", "agents": message["agents"]})

    async def relay_sandbox_message(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "sandbox_message", "message": message["message"]})

    async def relay_sandbox_typing(self, message: dict[str, Any]) -> None:
        await self.send_json(
            {"type": "sandbox_typing", "chat_id": message["chat_id"], "typing": message["typing"]}
        )
