"""Edits made by people in the admin: media descriptions. A person's description is curated and
always wins over an AI one (the describer never overwrites a curated row)."""

from __future__ import annotations

from django.db import transaction

from media_catalog.models import MediaDescription


def _mark_curated(description: MediaDescription) -> None:
    description.source = MediaDescription.Source.CURATED
    description.status = MediaDescription.Status.CURATED


@transaction.atomic
def media_description_save(*, description: MediaDescription, text_changed: bool) -> MediaDescription:
    """Store a description edited in the admin. Changing its text makes it curated."""
    if text_changed:
        description.description = (description.description or "").strip() or None
        _mark_curated(description)
    description.save()
    return description


@transaction.atomic
def media_description_curate(*, description: MediaDescription, text: str | None = None) -> MediaDescription:
    """Adopt a description as curated, optionally with new text."""
    if text is not None:
        description.description = text.strip() or None
    _mark_curated(description)
    description.save(update_fields=["description", "source", "status", "updated"])
    return description


def media_descriptions_curate(*, ids: list[int], text: str | None = None) -> int:
    """Curate many descriptions at once (admin bulk action); returns how many rows changed."""
    count = 0
    for description in MediaDescription.objects.filter(pk__in=ids).order_by("pk"):
        media_description_curate(description=description, text=text)
        count += 1
    return count
