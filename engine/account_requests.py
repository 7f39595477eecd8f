"""Gateway requests about the account itself: chat mute settings, joining and leaving chats, the
profile and the contacts. Operators ask for them in the admin; the gateway holding the agent runs
them through its transport, records the outcome on the request and in the activity stream.

Every request that changes the profile or the contacts ends with a fresh read of both, so the
admin's account page always shows what Telegram holds after the change.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.models import Agent, GatewayRequest
from agents.services.telegram_requests import PROFILE_PHOTO_DIR, PROFILE_UPLOAD_DIR, gateway_request_describe
from conversations.models import ActivityEvent, Conversation
from conversations.services.activity import record_event
from conversations.services.ingest import conversation_apply_details
from conversations.transport.base import ChatDetails, PermanentError, Transport
from engine.handlers.send_media import library_ref
from engine.library_requests import save_to_library
from engine.request_errors import request_error

Kind = GatewayRequest.Kind


def profile_photo_dir(agent_id: int) -> Path:
    return Path(settings.MEDIA_ROOT) / PROFILE_PHOTO_DIR / str(agent_id)


def _media_relative(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(settings.MEDIA_ROOT).resolve()))
    except ValueError:
        return ""


async def _read_account(request: GatewayRequest, transport: Transport) -> dict[str, Any]:
    profile = await transport.get_profile(photo_dir=profile_photo_dir(request.agent_id))
    contacts = await transport.contacts()
    await sync_to_async(_record_username)(agent_id=request.agent_id, username=profile.username)
    return {
        "profile": {
            "user_id": profile.user_id,
            "first_name": profile.first_name,
            "last_name": profile.last_name,
            "username": profile.username,
            "about": profile.about,
            "about_limit": profile.about_limit,
            "photos": [
                {
                    "id": p.photo_id,
                    "date": p.date.isoformat() if p.date else "",
                    "file": _media_relative(p.path),
                }
                for p in profile.photos
            ],
        },
        "contacts": [
            {
                "user_id": c.user_id,
                "first_name": c.first_name,
                "last_name": c.last_name,
                "username": c.username,
                "phone": c.phone,
                "mutual": c.mutual,
            }
            for c in contacts
        ],
    }


def _record_username(*, agent_id: int, username: str) -> None:
    Agent.objects.filter(pk=agent_id).exclude(telegram_username=username).update(telegram_username=username)


def _conversation_set_muted(*, agent_id: int, peer_id: int, muted: bool) -> int | None:
    conversation = (
        Conversation.objects.filter(agent_id=agent_id, peer_id=peer_id).order_by("topic_id").first()
    )
    if conversation is None:
        return None
    # A forum's topics are the same Telegram chat: muted together with it.
    Conversation.objects.filter(agent_id=agent_id, peer_id=peer_id).update(muted=muted)
    return conversation.pk


def _conversation_joined(*, agent_id: int, details: ChatDetails) -> int:
    agent = Agent.objects.get(pk=agent_id)
    return conversation_apply_details(agent=agent, details=details).pk


def _conversation_id(*, agent_id: int, peer_id: int) -> int | None:
    return (
        Conversation.objects.filter(agent_id=agent_id, peer_id=peer_id)
        .order_by("topic_id")
        .values_list("pk", flat=True)
        .first()
    )


async def _set_muted(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    peer_id, muted = int(params["peer_id"]), bool(params["muted"])
    await transport.set_muted(peer_id, muted)
    await sync_to_async(_conversation_set_muted)(agent_id=request.agent_id, peer_id=peer_id, muted=muted)
    return {"peer_id": peer_id, "muted": muted}


async def _join(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    details = await transport.join_chat(str(params["target"]))
    conversation_id = await sync_to_async(_conversation_joined)(agent_id=request.agent_id, details=details)
    return {
        "peer_id": details.peer_id,
        "kind": details.kind,
        "title": details.title,
        "username": details.username,
        "conversation_id": conversation_id,
    }


async def _leave(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    peer_id = int(params["peer_id"])
    await transport.leave_chat(peer_id)
    return {"peer_id": peer_id}


async def _update_profile(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    await transport.update_profile(
        first_name=str(params["first_name"]),
        last_name=str(params.get("last_name", "")),
        about=str(params.get("about", "")),
    )
    if "username" in params:
        await transport.set_username(str(params["username"]))
    return await _read_account(request, transport)


def _own_user_id(agent_id: int) -> int:
    return Agent.objects.filter(pk=agent_id).values_list("telegram_user_id", flat=True).first() or 0


async def library_picture_fetch(request: GatewayRequest, transport: Transport, unique_id: str) -> Path:
    """A copy of the library picture `unique_id` under MEDIA_ROOT/profile_uploads/<agent id>/, where
    uploads wait too: the item's own file, else its Saved Messages message downloaded (Telegram)."""
    ref = await sync_to_async(library_ref)(agent_id=request.agent_id, unique_id=unique_id)
    if ref is None:
        raise PermanentError("MEDIA_NOT_FOUND", f"{unique_id!r} is not in the agent's media library")
    if ref.media_kind != "photo":
        raise PermanentError(
            "PHOTO_INVALID",
            f"library item {unique_id} is {ref.media_kind}, not a photo: only photos become profile photos",
        )
    folder = Path(settings.MEDIA_ROOT) / PROFILE_UPLOAD_DIR / str(request.agent_id)
    if ref.file:
        source = Path(settings.MEDIA_ROOT) / ref.file
        if not source.is_file():
            raise PermanentError("MEDIA_NOT_FOUND", f"library item {unique_id}'s file {ref.file} is missing")
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{uuid.uuid4().hex}{source.suffix.lower()}"
        await sync_to_async(shutil.copyfile)(source, target)
        return target
    if ref.saved_message_id is not None:
        me = await sync_to_async(_own_user_id)(request.agent_id)
        saved = await transport.download_media(me, ref.saved_message_id, folder)
        if saved is not None:
            return saved
    raise PermanentError(
        "MEDIA_NOT_FOUND", f"library item {unique_id} has no file and is no longer in Saved Messages"
    )


async def _add_photo(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    """An upload (`file`, under MEDIA_ROOT) or a picture of the media library (`library`, its unique id)."""
    if params.get("library"):
        path = await library_picture_fetch(request, transport, str(params["library"]))
    else:
        path = Path(settings.MEDIA_ROOT) / str(params["file"])
    await transport.add_profile_photo(path)
    return await _read_account(request, transport)


async def _delete_photo(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    await transport.delete_profile_photo(int(params["photo_id"]))
    return await _read_account(request, transport)


async def _add_contact(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    await transport.add_contact(
        str(params["target"]),
        first_name=str(params.get("first_name", "")),
        last_name=str(params.get("last_name", "")),
    )
    return await _read_account(request, transport)


async def _delete_contacts(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    await transport.delete_contacts([int(u) for u in params["user_ids"]])
    return await _read_account(request, transport)


async def _read(request: GatewayRequest, transport: Transport, params: dict) -> dict[str, Any]:
    return await _read_account(request, transport)


Handler = Callable[[GatewayRequest, Transport, dict], Awaitable[dict[str, Any]]]
HANDLERS: dict[str, Handler] = {
    Kind.SET_MUTED: _set_muted,
    Kind.JOIN_CHAT: _join,
    Kind.LEAVE_CHAT: _leave,
    Kind.READ_ACCOUNT: _read,
    Kind.UPDATE_PROFILE: _update_profile,
    Kind.ADD_PROFILE_PHOTO: _add_photo,
    Kind.DELETE_PROFILE_PHOTO: _delete_photo,
    Kind.ADD_CONTACT: _add_contact,
    Kind.DELETE_CONTACTS: _delete_contacts,
    Kind.SAVE_TO_LIBRARY: save_to_library,
}


def _record_outcome(*, request: GatewayRequest, result: dict[str, Any], error: str) -> None:
    params = request.params or {}
    peer_id = result.get("peer_id") or params.get("peer_id")
    conversation_id = result.get("conversation_id")
    if conversation_id is None and peer_id is not None:
        conversation_id = _conversation_id(agent_id=request.agent_id, peer_id=int(peer_id))
    what = gateway_request_describe(request)
    record_event(
        ActivityEvent.Kind.AGENT_ERROR if error else ActivityEvent.Kind.INFO,
        agent_id=request.agent_id,
        conversation_id=conversation_id,
        summary=f"{what}: request failed: {error}" if error else f"{what}: done in Telegram",
        data={"gateway_request": request.pk, "kind": request.kind, "ok": not error},
    )


async def account_request_run(
    request: GatewayRequest, transport: Transport, handler: Handler
) -> tuple[dict[str, Any], str]:
    """Run one account request and record its outcome in the activity stream; returns (result, error)."""
    try:
        result, error = await handler(request, transport, request.params or {}), ""
    except Exception as exc:
        result, error = {}, request_error(request, exc)
    await sync_to_async(_record_outcome)(request=request, result=result, error=error)
    return result, error
