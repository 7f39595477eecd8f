"""Records kept for operators: cached translations of messages, the models a provider offers, and the
global parameters they override."""

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
        "llm.LLMCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
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
    """A model on offer: one a provider lists (OpenRouter's `/models`, fetched by a worker), or one an
    operator added or edited in the admin. A refresh replaces the fetched rows only: a row an operator
    saved is theirs, and stays as they left it. `offered` rows are the LLM choices shown to personas'
    editors (agent form, conversation page), in `position` order."""

    class Source(models.TextChoices):
        FETCHED = "fetched", "Fetched from the provider"
        OPERATOR = "operator", "Added or edited by an operator"

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=200)
    name = models.CharField(max_length=255, blank=True)
    llm_name = models.CharField(
        "LLM name",
        max_length=200,
        blank=True,
        help_text="The name personas use in their LLM field (gpt-5-mini, anthropic/claude-sonnet-4.5); "
        "empty for a fetched row: openrouter:<model>",
    )
    context_length = models.PositiveIntegerField(null=True, blank=True)
    input_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    output_per_million = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.FETCHED)
    offered = models.BooleanField(
        "offered to personas", default=False, help_text="Listed as an LLM choice in the agent form"
    )
    position = models.PositiveIntegerField(default=0, help_text="Display order: smaller first")
    fetched = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["provider", "model"]
        verbose_name = "LLMs and prices"
        verbose_name_plural = "LLMs and prices"
        constraints = [models.UniqueConstraint(fields=["provider", "model"], name="offeredmodel_unique")]

    def __str__(self) -> str:
        return self.persona_name

    @property
    def persona_name(self) -> str:
        """What an agent's LLM field holds to use this model."""
        return self.llm_name or f"{self.provider}:{self.model}"


class SiteParameter(models.Model):
    """An operator's override of one run-time setting (`cindy_site/parameters.py` lists which), read
    instead of the environment's value from the next turn on."""

    name = models.CharField(max_length=64, unique=True)
    value = models.TextField(blank=True)
    updated = models.DateTimeField()
    updated_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "global parameter"

    def __str__(self) -> str:
        return f"{self.name} = {self.value}"
