"""The models a provider offers: OpenRouter's `/models` list with prices, fetched on a worker.

The fetched rows (`OfferedModel`, source `fetched`) are the cache: the admin's LLM page shows them and
asks for a refresh when they are older than OFFERED_MAX_AGE. A failed fetch keeps the previous rows and
says why. Rows an operator added or edited in the admin (source `operator`) are never touched by a
refresh; the rows marked "offered to personas" are the LLM choices of the agent form.
"""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal, InvalidOperation
from typing import Any

import httpx
from django.conf import settings
from django.db import transaction

from cindy_site.clock import now
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from llm.models import OfferedModel

logger = logging.getLogger(__name__)

OFFERED_MAX_AGE = dt.timedelta(hours=24)
FETCH_TIMEOUT_SECONDS = 20.0
_MILLION = Decimal(1_000_000)


class OfferedModelsError(RuntimeError):
    pass


def _per_million(value: Any) -> Decimal | None:
    """OpenRouter prices are USD per token, as strings ("0.000002"); -1 means "varies"."""
    try:
        price = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return None if price < 0 else (price * _MILLION).quantize(Decimal("0.0001"))


def parse_openrouter_models(payload: Any) -> list[dict[str, Any]]:
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list):
        raise OfferedModelsError('the reply has no "data" list of models')
    models = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
            continue
        pricing = item.get("pricing") if isinstance(item.get("pricing"), dict) else {}
        context = item.get("context_length")
        models.append(
            {
                "model": item["id"][:200],
                "name": str(item.get("name") or "")[:255],
                "context_length": context if isinstance(context, int) and context > 0 else None,
                "input_per_million": _per_million(pricing.get("prompt")),
                "output_per_million": _per_million(pricing.get("completion")),
            }
        )
    return models


def openrouter_models_refresh() -> int:
    """Fetch OpenRouter's list and replace the cached rows; returns the number of models."""
    if not settings.OPENROUTER_API_KEY:
        raise OfferedModelsError("OPENROUTER_API_KEY is not set: OpenRouter's model list needs a key")
    url = settings.OPENROUTER_BASE_URL.rstrip("/") + "/models"
    try:
        response = httpx.get(
            url,
            headers={"Authorization": f"Bearer {settings.OPENROUTER_API_KEY}"},
            timeout=FETCH_TIMEOUT_SECONDS,
        )
        response.raise_for_status()
        models = parse_openrouter_models(response.json())
    except (httpx.HTTPError, ValueError) as exc:
        raise OfferedModelsError(f"GET {url} failed: {exc}") from exc
    when = now()
    with transaction.atomic():
        fetched = OfferedModel.objects.filter(provider="openrouter", source=OfferedModel.Source.FETCHED)
        fetched.delete()
        # A row an operator added or edited is theirs: the refresh neither replaces nor duplicates it.
        kept = set(
            OfferedModel.objects.filter(
                provider="openrouter", source=OfferedModel.Source.OPERATOR
            ).values_list("model", flat=True)
        )
        OfferedModel.objects.bulk_create(
            [
                OfferedModel(provider="openrouter", fetched=when, source=OfferedModel.Source.FETCHED, **model)
                for model in models
                if model["model"] not in kept
            ]
        )
    return len(models)


def openrouter_models_refresh_task() -> str:
    """The django-q2 entry point: refresh, and record the outcome in the activity stream."""
    try:
        count = openrouter_models_refresh()
    except OfferedModelsError as exc:
        logger.warning("OpenRouter model list: %s", exc)
        record_event(ActivityEvent.Kind.INFO, summary=f"OpenRouter model list not refreshed: {exc}")
        return str(exc)
    record_event(ActivityEvent.Kind.INFO, summary=f"OpenRouter model list refreshed: {count} models")
    return f"{count} models"


def offered_llm_names() -> list[str]:
    """The LLM names offered to personas' editors, in the operator's order (position, then name)."""
    rows = OfferedModel.objects.filter(offered=True).order_by("position", "provider", "model")
    return [row.persona_name for row in rows.only("provider", "model", "llm_name")]


def openrouter_models_stale() -> bool:
    fetched = OfferedModel.objects.filter(provider="openrouter", source=OfferedModel.Source.FETCHED)
    newest = fetched.exclude(fetched=None).order_by("-fetched").first()
    return newest is None or newest.fetched < now() - OFFERED_MAX_AGE


def openrouter_models_refresh_request() -> None:
    """Queue a refresh on the workers once the current transaction commits."""

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task("llm.offered.openrouter_models_refresh_task")

    transaction.on_commit(enqueue)
