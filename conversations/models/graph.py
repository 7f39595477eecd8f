"""Task graphs: the planned actions for one conversation, and the nodes the tick runs."""

from __future__ import annotations

from django.db import models

from agents.models import Agent
from conversations.models.chat import Conversation


class NodeKind(models.TextChoices):
    RECEIVED = "received", "Received"
    SEND = "send", "Send"
    STICKER = "sticker", "Sticker"
    REACT = "react", "React"
    WAIT = "wait", "Wait"
    BLOCK = "block", "Block"
    UNBLOCK = "unblock", "Unblock"
    CLEAR_CONVERSATION = "clear-conversation", "Clear conversation"
    SHUTDOWN = "shutdown", "Shutdown"
    # initiative kinds
    XSEND = "xsend", "Cross-chat send"
    SEND_MEDIA = "send_media", "Send media"
    # a picture made on a worker while planning, sent here as a photo
    IMAGE = "image", "Picture"
    VOICE = "voice", "Voice note"


#: Kinds that need an LLM and run on a django-q2 worker; every other kind runs in the gateway.
BRAIN_KINDS = frozenset({NodeKind.RECEIVED})


class NodeStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class TaskGraph(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        MESSAGE = "message", "Message"
        NEW_CONVERSATION = "new_conversation", "New conversation"
        REACTION = "reaction", "Reaction"
        XSEND = "xsend", "Cross-chat intention"
        CONTINUATION = "continuation", "Continuation"
        # Memory: a conversation's unsummarized messages reached the threshold, or an operator asked.
        SUMMARIZE = "summarize", "Summarization"
        # initiative triggers: the payload is in the graph's context ("xsend" / "event" intent)
        EVENT = "event", "Scheduled event"
        NUDGE = "nudge", "Operator nudge"
        SCHEDULE = "schedule", "Daily schedule planning"
        # A quiet conversation's new messages reviewed into notes and memories (engine/consolidation.py).
        CONSOLIDATE = "consolidate", "Consolidation while quiet"

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="graphs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    # Equal to conversation_id while the graph is active and NULL afterwards: a plain unique index
    # then allows one active graph per conversation on SQLite and MySQL alike (NULLs never collide).
    active_slot = models.BigIntegerField(null=True, blank=True, unique=True, editable=False)
    trigger = models.CharField(max_length=32, choices=Trigger.choices, blank=True)
    target_message_id = models.BigIntegerField(null=True, blank=True)
    context = models.JSONField(default=dict, blank=True, help_text="Retrieved pages and other state")
    created = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["conversation", "status"], name="taskgraph_conv_status_idx")]

    def __str__(self) -> str:
        return f"Graph {self.pk} for {self.conversation} ({self.status})"


class TaskNode(models.Model):
    graph = models.ForeignKey(TaskGraph, on_delete=models.CASCADE, related_name="nodes")
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="nodes")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="nodes")
    kind = models.CharField(max_length=32, choices=NodeKind.choices)
    params = models.JSONField(default=dict, blank=True)
    sequence = models.PositiveIntegerField(default=0, help_text="Order within the graph")
    depends_on = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="dependents")
    status = models.CharField(max_length=16, choices=NodeStatus.choices, default=NodeStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    not_before = models.DateTimeField()
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    random_id = models.BigIntegerField(null=True, blank=True, help_text="Stored before the first send")
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created = models.DateTimeField()
    started = models.DateTimeField(null=True, blank=True)
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["graph", "sequence", "id"]
        indexes = [
            # The idle tick's first test (`pending_nodes_due`) and the node timer (`node_next_due_at`):
            # pending nodes by not_before.
            models.Index(fields=["status", "not_before"], name="tasknode_eligible_idx"),
            # The lease reaper: running nodes whose lease has expired.
            models.Index(fields=["status", "lease_expires_at"], name="tasknode_lease_idx"),
            # The tick's candidate read (`conversation_heads`, polled by `Ticker.claim` every pass): the
            # oldest eligible node of each active conversation, and whether a node of it is running.
            models.Index(fields=["conversation", "status", "not_before"], name="tasknode_queue_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"


class GatewayWake(models.Model):
    """One row whose counters every writer of gateway work bumps after its commit (`engine/wake.py`).

    Without Redis, idle gateways read these counters every CINDY_WAKE_POLL_SECONDS (a primary-key
    read) and run a pass as soon as one moves, instead of waiting for the next tick.
    """

    ROW_ID = 1

    #: Wake-ups whose work may be anywhere: a woken gateway runs a full pass.
    counter = models.BigIntegerField(default=0)
    #: Wake-ups for a turn only (a message came, nodes were planned): a woken gateway runs the steps
    #: a turn needs (ingest, media, tick, presence), not the backstop ones (engine/wake.py).
    turns = models.BigIntegerField(default=0)
    #: Empty for the installation's row (every gateway reads it); a gateway id for the row of wake-ups
    #: meant for that gateway alone (the holder of the agent that has work: docs/engine.md).
    gateway = models.CharField(max_length=200, blank=True, default="", unique=True)

    def __str__(self) -> str:
        return f"gateway wake-up #{self.counter}"
