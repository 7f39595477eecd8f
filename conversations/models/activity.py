"""What happened: the activity stream (LLM calls and their prices are the llm app's: llm/models)."""

from __future__ import annotations

from django.db import models

from agents.models import Agent
from conversations.models.chat import Conversation


class ActivityEvent(models.Model):
    class Kind(models.TextChoices):
        MESSAGE_IN = "message_in", "Message in"
        MESSAGE_OUT = "message_out", "Message out"
        MESSAGE_EDITED = "message_edited", "Message edited"
        MESSAGE_DELETED = "message_deleted", "Message deleted"
        REACTION = "reaction", "Reaction"
        TRIGGER = "trigger", "Trigger"
        REPLAN = "replan", "Replan"
        NODE_CLAIMED = "node_claimed", "Node claimed"
        NODE_DONE = "node_done", "Node done"
        NODE_FAILED = "node_failed", "Node failed"
        NODE_RETRIED = "node_retried", "Node retried"
        NODE_DEFERRED = "node_deferred", "Node deferred"
        GRAPH_DELETED = "graph_deleted", "Graph deleted"
        WORK_CANCELLED = "work_cancelled", "Work cancelled"
        LLM_CALL = "llm_call", "LLM call"
        POLICY_REFUSED = "policy_refused", "Policy refused"
        LOOP_GUARD = "loop_guard", "Loop guard"
        TYPING = "typing", "Typing"
        AGENT_ONLINE = "agent_online", "Agent online"
        AGENT_OFFLINE = "agent_offline", "Agent offline"
        AGENT_ERROR = "agent_error", "Agent error"
        INFO = "info", "Info"

    created = models.DateTimeField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="activity")
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.SET_NULL, related_name="activity"
    )
    node_id = models.BigIntegerField(null=True, blank=True)
    summary = models.TextField(blank=True)
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            # The dashboard relay and reconnect catch-up read events after a given id (the pk).
            models.Index(fields=["agent", "-id"], name="activity_agent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.created:%H:%M:%S} {self.kind} {self.summary[:60]}"
