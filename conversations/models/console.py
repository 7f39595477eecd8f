"""Records kept for operators: cached translations of messages, and the models a provider offers."""

from __future__ import annotations

import hashlib

from django.db import models


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Translation(models.Model):
    """One message text in one language, as an LLM translated it for an operator.

    Keyed on the text's digest rather than the message row, so the same text in many messages is
    translated once, and an edited message (new text) gets a fresh translation.
    """

    language = models.CharField(max_length=64)
    source_digest = models.CharField(max_length=64)
    source_text = models.TextField()
    translated_text = models.TextField()
    llm_call = models.ForeignKey(
        "conversations.LLMCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["language", "source_digest"], name="translation_unique_text")
        ]

    def __str__(self) -> str:
        return f"{self.language}: {self.source_text[:40]}"


class OfferedModel(models.Model):
    """A model a provider lists (OpenRouter's `/models`), with its prices, fetched by a worker."""

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    name = models.CharField(max_length=255, blank=True)
    context_length = models.PositiveIntegerField(null=True, blank=True)
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    fetched = models.DateTimeField()

    class Meta:
        ordering = ["provider", "model"]
        verbose_name = "LLMs and prices"
        verbose_name_plural = "LLMs and prices"
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="offeredmodel_unique")]

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"
