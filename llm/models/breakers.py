"""Circuit breakers per LLM route, shared by every worker through the database (`llm/breakers.py`)."""

from __future__ import annotations

from django.db import models


class RouteBreaker(models.Model):
    """The health of one route (provider and model) as every process sees it.

    Closed: turns use the route. After CINDY_LLM_BREAKER_FAILURES failed calls in a row it opens:
    turns skip it until `open_until` (the cool-down, or the provider's Retry-After when longer). Then
    one turn claims the probe (`probing`, until `probe_until`, so a probe whose worker died is claimed
    again); its success closes the breaker, its failure opens it for another cool-down.
    """

    class State(models.TextChoices):
        CLOSED = "closed", "Closed"
        OPEN = "open", "Open"
        PROBING = "probing", "Probing"

    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    state = models.CharField(max_length=16, choices=State.choices, default=State.CLOSED)
    #: Failed calls in a row (reset by a success).
    failures = models.PositiveIntegerField(default=0)
    open_until = models.DateTimeField(null=True, blank=True)
    probe_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    changed = models.DateTimeField(help_text="When the state last changed")

    class Meta:
        ordering = ["provider", "model"]
        verbose_name = "LLM route breaker"
        constraints = [
            models.UniqueConstraint(fields=["provider", "model"], name="routebreaker_route_unique")
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} {self.state}"
