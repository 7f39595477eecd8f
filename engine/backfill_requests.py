"""The `backfill_page` gateway request: one page of a Telegram chat's older history, fetched by the
gateway that holds the agent and stored through the normal ingest (engine/ingest.py, as older
history: no triggers, no activity events; recall indexes it in the same transaction).

`manage.py backfill` (engine/backfill.py) asks for the pages one at a time. The page and the chat's
`BackfillMark` are written in one transaction, so the mark never points past a page that was not
stored. A flood wait is an answer, not a failure: the transport has paused the account for that long
(telegram/client.py), and the command waits the same time before it asks for the next page.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from agents.models import GatewayRequest
from cindy_site.clock import now
from conversations.models import BackfillMark
from conversations.transport.base import FloodWait, HistoryPage, Transport
from engine.ingest import ingest_history

#: Messages per page: Telegram's largest messages.getHistory page.
PAGE_LIMIT = 100


def _store_page(*, agent_id: int, peer_id: int, page: HistoryPage, limit: int) -> BackfillMark:
    with transaction.atomic():
        if page.messages:
            ingest_history(agent_id=agent_id, records=page.messages, trigger=False, older=True)
        mark, _ = BackfillMark.objects.select_for_update().get_or_create(
            agent_id=agent_id, peer_id=peer_id, defaults={"updated": now()}
        )
        if page.oldest_id is not None and (
            mark.oldest_message_id is None or page.oldest_id < mark.oldest_message_id
        ):
            mark.oldest_message_id = page.oldest_id
            mark.oldest_date = page.oldest_date or mark.oldest_date
        mark.complete = mark.complete or page.count < limit
        mark.fetched += len(page.messages)
        mark.updated = now()
        mark.save()
        return mark


async def backfill_page(request: GatewayRequest, transport: Transport) -> dict[str, Any]:
    params = request.params or {}
    peer_id, before_id = int(params["peer_id"]), int(params.get("before_id") or 0)
    limit = min(max(int(params.get("limit") or PAGE_LIMIT), 1), PAGE_LIMIT)
    try:
        page = await transport.history_page(peer_id, before_id=before_id, limit=limit)
    except FloodWait as exc:
        return {"peer_id": peer_id, "flood_wait": exc.seconds, "stored": 0}
    mark = await sync_to_async(_store_page)(
        agent_id=request.agent_id, peer_id=peer_id, page=page, limit=limit
    )
    return {
        "peer_id": peer_id,
        "flood_wait": 0,
        "stored": len(page.messages),
        "read": page.count,
        "oldest_id": mark.oldest_message_id,
        "oldest_date": mark.oldest_date.isoformat() if mark.oldest_date else None,
        "complete": mark.complete,
    }
