"""Gateway requests: Telegram work that web or worker code asked for, run by the agent's gateway."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from agents.models import GatewayRequest
from cindy_site.clock import now
from conversations.transport.base import Transport
from media_catalog.models import Sticker, StickerSet

logger = logging.getLogger(__name__)

#: Requests taken per agent per step.
BATCH = 10


def requests_claim(*, agent_id: int, holder: str) -> list[GatewayRequest]:
    """Claim the agent's pending requests, oldest first (compare-and-set on status)."""
    claimed = []
    pending = GatewayRequest.objects.filter(agent_id=agent_id, status=GatewayRequest.Status.PENDING).order_by(
        "created", "id"
    )[:BATCH]
    for request in pending:
        changed = GatewayRequest.objects.filter(pk=request.pk, status=GatewayRequest.Status.PENDING).update(
            status=GatewayRequest.Status.RUNNING, claimed_by=holder
        )
        if changed == 1:
            request.status = GatewayRequest.Status.RUNNING
            claimed.append(request)
    return claimed


def request_finish(*, request_id: int, result: dict[str, Any] | None = None, error: str = "") -> None:
    status = GatewayRequest.Status.FAILED if error else GatewayRequest.Status.DONE
    GatewayRequest.objects.filter(pk=request_id).update(
        status=status, result=result or {}, error=error[:5000], finished=now()
    )


def store_sticker_set(*, info) -> dict[str, Any]:
    with transaction.atomic():
        sticker_set, _ = StickerSet.objects.update_or_create(
            short_name=info.short_name, defaults={"title": info.title, "fetched_at": now()}
        )
        for position, ref in enumerate(info.stickers):
            Sticker.objects.update_or_create(
                sticker_set=sticker_set,
                unique_id=ref.unique_id or f"{info.short_name}:{position}",
                defaults={
                    "name": ref.name,
                    "position": position,
                    "document_id": ref.ref.get("document_id"),
                    "access_hash": ref.ref.get("access_hash"),
                },
            )
    return {"stickers": len(info.stickers), "title": info.title}


def _random_id_for(request: GatewayRequest) -> int:
    # Fixed per request, so a send retried after a crash is deduplicated by Telegram.
    return (1 << 61) + request.pk


async def execute_request(request: GatewayRequest, transport: Transport) -> tuple[dict[str, Any], str]:
    """Run one request; returns (result, error)."""
    params = request.params or {}
    try:
        if request.kind == GatewayRequest.Kind.SEND_OTP:
            sent = await transport.send_text(
                int(params["user_id"]), str(params["text"]), random_id=_random_id_for(request)
            )
            return {"message_id": sent.message_id}, ""
        if request.kind == GatewayRequest.Kind.IMPORT_STICKER_SET:
            info = await transport.resolve_sticker_set(str(params["short_name"]))
            return await sync_to_async(store_sticker_set)(info=info), ""
        if request.kind == GatewayRequest.Kind.REFRESH_PROFILE:
            details = await transport.get_details(int(params["peer_id"]))
            return {"title": details.title, "username": details.username, "about": details.about}, ""
        return {}, f"gateway request kind {request.kind!r} is not supported by this gateway"
    except KeyError as exc:
        return {}, f"{request.get_kind_display()} request {request.pk} is missing parameter {exc}"
    except Exception as exc:
        logger.warning("gateway request %s (%s) failed: %r", request.pk, request.kind, exc)
        return {}, f"{type(exc).__name__}: {exc}"
