"""What the llm app does when apps below it announce something (see their signals)."""

from __future__ import annotations

from django.dispatch import receiver

from media_catalog.signals import describe_again_requested


@receiver(describe_again_requested, dispatch_uid="llm.describe_again_requested")
def queue_media_descriptions_refresh(sender, *, ids: list[int], **kwargs) -> None:
    """The admin's "Describe again": the descriptions are redone on a worker."""
    # Loaded on first use: the describing code (providers, media decoding) stays out of processes
    # that never describe anything.
    from llm.media_refresh import media_descriptions_refresh_request

    media_descriptions_refresh_request(ids=ids)
