"""LLM calls with their usage and cost, the price table, and the daily totals of pruned calls."""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from agents.models import Agent
from conversations.models import Conversation


class LLMCall(models.Model):
    class Status(models.TextChoices):
        OK = "ok", "OK"
        ERROR = "error", "Error"
        BLOCKED = "blocked", "Blocked"
        EMPTY = "empty", "Empty"
        #: Recorded before the request is sent; a call still pending was cut off by a killed worker.
        PENDING = "pending", "Pending"
        INTERRUPTED = "interrupted", "Interrupted"

    class Purpose(models.TextChoices):
        PLAN = "plan", "Plan a turn"
        DESCRIBE = "describe", "Describe media"
        SUMMARIZE = "summarize", "Summarize"
        TRANSLATE = "translate", "Translate for an operator"
        TRANSCRIBE = "transcribe", "Transcribe a voice note"
        IMAGE = "image", "Make a picture"
        SPEECH = "speech", "Speak a voice note"
        #: Embedding recall entries or a recall search's query (recall/provider_vectors.py).
        EMBED = "embed", "Embed for recall"
        #: Not a request: making or extending a Gemini explicit cache (its tokens and storage time).
        CACHE = "cache", "Keep an explicit cache"

    created = models.DateTimeField()
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="llm_calls"
    )
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="llm_calls"
    )
    node_id = models.BigIntegerField(null=True, blank=True)
    purpose = models.CharField(max_length=32, choices=Purpose.choices, default=Purpose.PLAN)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    #: Of the input tokens, those written to the provider's prompt cache (Anthropic's
    #: `cache_creation_input_tokens`, billed at the price's cache write rate).
    cache_write_tokens = models.PositiveIntegerField(default=0)
    thinking_tokens = models.PositiveIntegerField(default=0)
    #: Of the input tokens, those the provider counted as audio (billed at the audio rate).
    audio_tokens = models.PositiveIntegerField(default=0)
    #: Seconds of audio a provider billed by duration (a transcription model such as whisper-1).
    audio_seconds = models.FloatField(default=0)
    #: The part of output_tokens that is image output (billed at the price's image output rate).
    image_output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    latency_ms = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OK)
    error = models.TextField(blank=True)
    #: A planning call's identity within its node's attempt (node, attempt, route, request before the
    #: final turn): a planning task killed after the reply came runs again without a second call.
    fingerprint = models.CharField(max_length=64, blank=True)
    reply = models.TextField(blank=True, help_text="The reply text of a finished planning call")
    #: The process making the call ("<host>:<pid>"): when `runworkers` replaces a pool after a sudden
    #: death, the pending calls of the processes it killed are closed at once (`llm_calls_interrupt`).
    worker = models.CharField(max_length=120, blank=True)
    #: A planning call sent with a Gemini explicit cache of its prefix (its cached tokens came from
    #: it), or, for purpose `cache`, the cost of making or keeping one (llm/explicit_cache.py).
    explicit_cache = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "LLM call"
        indexes = [
            # The dashboard's "usage today per agent" aggregate.
            models.Index(fields=["created", "agent"], name="llmcall_day_idx"),
            # call_llm's look-up of a finished call to reuse for the same planning request.
            models.Index(fields=["node_id", "fingerprint"], name="llmcall_fingerprint_idx"),
            # The task workers' sweep of calls left pending by a killed worker.
            models.Index(fields=["status", "created"], name="llmcall_pending_idx"),
            # llm/explicit_cache.py: a conversation's planning calls of the last hour (is it busy, and
            # does the implicit cache miss?).
            models.Index(fields=["conversation", "created"], name="llmcall_conversation_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} {self.status}"


class ModelPrice(models.Model):
    """Prices in USD per million tokens (and per audio minute), editable in the admin. Longest matching
    model prefix wins."""

    provider = models.CharField(max_length=32)
    model_prefix = models.CharField(max_length=100, help_text="Matches models starting with this")
    input_per_million = models.DecimalField(max_digits=10, decimal_places=4)
    cached_input_per_million = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    output_per_million = models.DecimalField(max_digits=10, decimal_places=4)
    audio_input_per_million = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Audio input tokens, where the provider bills them apart; empty: the input price",
    )
    audio_per_minute = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal("0"),
        help_text="USD per minute of audio, for models billed by duration (whisper-1)",
    )
    image_output_per_million = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal("0"),
        help_text="Image output tokens (a picture a model makes); 0: billed at the output price",
    )
    cache_write_per_million = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Input tokens written to a prompt cache, where the provider bills them apart "
        "(Anthropic); empty: the input price",
    )
    cache_storage_per_million_hour = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal("0"),
        help_text="USD per million tokens per hour an explicit context cache is kept (Gemini)",
    )

    class Meta:
        ordering = ["provider", "model_prefix"]
        constraints = [models.UniqueConstraint(fields=["provider", "model_prefix"], name="modelprice_unique")]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_prefix}"


class LLMUsageDaily(models.Model):
    """LLM calls pruned by retention (`engine/retention.py`), kept as one row per day (TIME_ZONE), agent,
    provider and model, so costs over time stay true after the calls themselves are gone."""

    day = models.DateField()
    agent = models.ForeignKey("agents.Agent", null=True, blank=True, on_delete=models.SET_NULL)
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveBigIntegerField(default=0)
    cached_tokens = models.PositiveBigIntegerField(default=0)
    #: Of input_tokens, those written to a prompt cache (Anthropic).
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    thinking_tokens = models.PositiveBigIntegerField(default=0)
    cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)
    #: Of cached_tokens, those read from a Gemini explicit cache.
    explicit_cached_tokens = models.PositiveBigIntegerField(default=0)
    #: Of cost, what making and keeping explicit caches cost (LLMCall purpose `cache`).
    cache_cost = models.DecimalField(max_digits=14, decimal_places=6, default=0)

    class Meta:
        ordering = ["-day", "agent", "provider", "model"]
        verbose_name = "LLM usage per day"
        verbose_name_plural = "LLM usage per day"
        constraints = [
            models.UniqueConstraint(
                fields=["day", "agent", "provider", "model"], name="llm_usage_daily_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.day} {self.provider}/{self.model}: {self.calls} calls"
