"""Voice notes the agents say: made on a worker while planning, sent by the gateway."""

from __future__ import annotations

from django.db import models

from agents.models import Agent
from conversations.models.chat import Conversation


class VoiceNote(models.Model):
    """One spoken text, encoded as Telegram sends voice notes (OGG/Opus, 48 kHz mono).

    The worker that planned the turn writes the file and this row before the plan's nodes exist; the
    `voice` node carries the row's id, so a gateway killed mid-send sends the same file again, with
    the node's stored random_id, and Telegram answers the first message.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="voice_notes")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="voice_notes")
    planned_by_node_id = models.BigIntegerField(null=True, blank=True, help_text="The received node")
    text = models.TextField(help_text="What is said: the note's transcript")
    file = models.FileField(upload_to="voice_notes/")
    duration = models.FloatField(help_text="Seconds")
    waveform = models.BinaryField(max_length=64, help_text="Telegram's packed 5-bit waveform")
    provider = models.CharField(max_length=32)
    model = models.CharField(max_length=100)
    voice = models.CharField(max_length=100, blank=True)
    llm_call_id = models.BigIntegerField(null=True, blank=True)
    created = models.DateTimeField()

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"voice note {self.pk} ({self.duration:.1f} s) of {self.agent}"
