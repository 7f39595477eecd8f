"""Describing media again on an operator's request: the console's "Describe again" action.

The action queues `media_descriptions_refresh_task` with the rows' ids; a worker asks MEDIA_MODEL for
each row's file, as a first description would (`llm.media.describe_file`), and records the call's
cost the same way. Curated rows are never touched, and a row an operator curates while the call runs
keeps the operator's text: the result is written only where the row is still an AI one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.db import transaction

from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from conversations.services.media_files import media_description_file
from llm.errors import LLMConfigError
from llm.media import describe_file
from llm.routing import UnknownModelError
from media_catalog.models import MediaDescription

logger = logging.getLogger(__name__)


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


def media_descriptions_refresh(*, ids: list[int]) -> RefreshOutcome:
    """Describe each AI row of `ids` again from its stored file."""
    outcome = RefreshOutcome()
    for row in MediaDescription.objects.filter(pk__in=ids).order_by("pk"):
        if row.is_curated:
            outcome.curated.append(row.unique_id)
            continue
        stored = media_description_file(row)
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
