"""Gemini explicit context caches that workers share (`llm/explicit_cache.py`)."""

from __future__ import annotations

from django.db import models

from conversations.models import Conversation


class ExplicitCache(models.Model):
    """One explicit cache on the provider: a conversation's stable prompt prefix (the system instruction
    and its first `prefix_turns` history turns) for one model. Any worker whose request starts with the
    same prefix (same `prefix_hash`) sends only the rest, with `name`. The row goes when the cache
    expires, when the provider says it is gone, or when a newer cache replaces it."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="explicit_caches")
    provider = models.CharField(max_length=32, default="gemini")
    model = models.CharField(max_length=100)
    #: SHA-256 of the model, the system instruction and the first `prefix_turns` turns.
    prefix_hash = models.CharField(max_length=64)
    prefix_turns = models.PositiveIntegerField()
    #: The provider's resource name, e.g. "cachedContents/abc123".
    name = models.CharField(max_length=200)
    #: The cache's size as the provider counted it.
    tokens = models.PositiveIntegerField(default=0)
    created = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["model", "prefix_hash"], name="explicitcache_prefix_unique")
        ]
        indexes = [
            # llm/explicit_cache.py: the live caches of the conversation being planned.
            models.Index(fields=["conversation", "model"], name="explicitcache_conversation_idx")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model}, {self.prefix_turns} turns)"
