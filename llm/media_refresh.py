"""Describing media again on an operator's request: the console's "Describe again" action.

The action queues `media_descriptions_refresh_task` with the rows' ids; a worker asks MEDIA_MODEL for
each row's file, as a first description would (`llm.media.describe_file`), and records the call's
cost the same way. Curated rows are never touched, and a row an operator curates while the call runs
keeps the operator's text: the result is written only where the row is still an AI one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from conversations.models import ActivityEvent, Message
from conversations.services.activity import record_event
from llm.errors import LLMConfigError
from llm.media import describe_file
from llm.routing import UnknownModelError
from media_catalog.models import MediaDescription

logger = logging.getLogger(__name__)

#: How many messages naming the media are looked at to find a downloaded copy of it.
MESSAGES_LOOKED_AT = 20


@dataclass
class RefreshOutcome:
    described: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    curated: list[str] = field(default_factory=list)
    no_file: list[str] = field(default_factory=list)

    def summary(self) -> str:
        parts = [f"{len(self.described)} described"]
        if self.failed:
            parts.append(f"{len(self.failed)} not understood or failed ({', '.join(self.failed)})")
        if self.curated:
            parts.append(f"{len(self.curated)} curated, left as they are")
        if self.no_file:
            parts.append(f"{len(self.no_file)} without a stored file ({', '.join(self.no_file)})")
        return "Media descriptions refreshed: " + "; ".join(parts)


def media_descriptions_refresh_request(*, ids: list[int]) -> None:
    """Queue the refresh on the workers once the current transaction commits (ids only)."""

    def enqueue() -> None:
        from django_q.tasks import async_task

        async_task("llm.media_refresh.media_descriptions_refresh_task", list(ids))

    transaction.on_commit(enqueue)


def _stored_path(row: MediaDescription) -> tuple[Path, dict[str, Any]] | None:
    """The row's file (the catalog's copy, else the newest downloaded copy a message names) and the
    media part that describes it."""
    root = Path(settings.MEDIA_ROOT)
    part: dict[str, Any] = {
        "unique_id": row.unique_id,
        "media_kind": row.kind,
        "mime": row.mime,
        "sticker_set_name": row.sticker_set_name,
        "sticker_name": row.sticker_name,
    }
    if row.file and (root / row.file.name).is_file():
        return root / row.file.name, part
    candidates = Message.objects.filter(media__icontains=row.unique_id).order_by("-date", "-pk")
    for media in candidates.values_list("media", flat=True)[:MESSAGES_LOOKED_AT]:
        for found in media or []:
            if not isinstance(found, dict) or found.get("unique_id") != row.unique_id:
                continue
            extra = found.get("extra") if isinstance(found.get("extra"), dict) else {}
            name = found.get("file") or extra.get("file")
            if name and (root / name).is_file():
                return root / name, {**part, "mime": found.get("mime") or row.mime}
    return None


def media_descriptions_refresh(*, ids: list[int]) -> RefreshOutcome:
    """Describe each AI row of `ids` again from its stored file."""
    outcome = RefreshOutcome()
    for row in MediaDescription.objects.filter(pk__in=ids).order_by("pk"):
        if row.is_curated:
            outcome.curated.append(row.unique_id)
            continue
        stored = _stored_path(row)
        if stored is None:
            outcome.no_file.append(row.unique_id)
            continue
        path, part = stored
        status, text = describe_file(part, path)
        MediaDescription.objects.filter(pk=row.pk).exclude(source=MediaDescription.Source.CURATED).update(
            status=status, description=text, attempts=row.attempts + 1
        )
        (outcome.described if status == MediaDescription.Status.OK else outcome.failed).append(row.unique_id)
    return outcome


def media_descriptions_refresh_task(ids: list[int]) -> str:
    """Worker entry point: refresh, then one activity line saying what happened."""
    try:
        outcome = media_descriptions_refresh(ids=ids)
    except (LLMConfigError, UnknownModelError) as exc:
        summary = f"Media descriptions not refreshed: {exc}"
        logger.warning("%s", summary)
        record_event(ActivityEvent.Kind.INFO, summary=summary)
        return summary
    summary = outcome.summary()
    record_event(ActivityEvent.Kind.INFO, summary=summary)
    return summary
