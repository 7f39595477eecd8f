"""How far back a backfill has fetched a Telegram chat's history (engine/backfill.py)."""

from __future__ import annotations

from django.db import models

from agents.models import Agent


class BackfillMark(models.Model):
    """One per agent and Telegram chat: the oldest message a backfill has stored so far.

    The gateway moves it in the transaction that stores the page, so a backfill stopped anywhere
    goes on from the last page it stored. A forum's topics are one chat on Telegram: one mark.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="backfill_marks")
    peer_id = models.BigIntegerField(help_text="The Telegram chat")
    oldest_message_id = models.BigIntegerField(
        null=True, blank=True, help_text="The oldest message fetched; the next page ends before it"
    )
    oldest_date = models.DateTimeField(null=True, blank=True, help_text="That message's date")
    complete = models.BooleanField(default=False, help_text="The chat's first message was reached")
    fetched = models.PositiveIntegerField(default=0, help_text="Messages fetched by every run, in total")
    updated = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "peer_id"], name="backfill_mark_unique_chat")]

    def __str__(self) -> str:
        state = "complete" if self.complete else f"back to #{self.oldest_message_id}"
        return f"backfill of chat {self.peer_id} by {self.agent}: {state}"
