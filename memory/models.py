"""Memory: what agents remember about people, their plans, conversation summaries and intentions.

Channels are referred to by Telegram peer id (`channel_id`), not by foreign key, so this app does
not depend on `conversations`.
"""

from __future__ import annotations

import uuid

from django.db import models

from agents.models import Agent


def new_entry_id(prefix: str) -> str:
    """A fresh entry id in the original system's form: `<prefix>-<8 hex digits>`."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def new_memory_id() -> str:
    return new_entry_id("memory")


def new_plan_id() -> str:
    return new_entry_id("plan")


def new_summary_id() -> str:
    return new_entry_id("summary")


def new_intention_id() -> str:
    return new_entry_id("intent")


def new_note_id() -> str:
    return new_entry_id("note")


class Memory(models.Model):
    class Kind(models.TextChoices):
        CURATED = "curated", "Curated (per partner)"
        EPISODIC = "episodic", "Global episodic"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="memories")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    partner_id = models.BigIntegerField(
        null=True, blank=True, help_text="For curated memories: the partner's Telegram user id"
    )
    entry_id = models.CharField(
        max_length=100,
        default=new_memory_id,
        help_text="The id the agent uses to update or delete this memory (a remember task's id)",
    )
    content = models.TextField()
    created = models.DateTimeField(null=True, blank=True)
    created_raw = models.CharField(
        max_length=64, blank=True, help_text="The 'created' value exactly as the file had it"
    )
    creation_channel = models.CharField(max_length=255, blank=True)
    creation_channel_id = models.BigIntegerField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True, help_text="Unknown fields, kept as they came")
    position = models.PositiveIntegerField(default=0, help_text="Order within its file")
    source_file = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(
        max_length=64, blank=True, help_text="Hash of the curated file these rows came from, for re-import"
    )
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent", "kind", "partner_id", "position", "id"]
        verbose_name_plural = "memories"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(kind="episodic") | models.Q(partner_id__isnull=False),
                name="memory_curated_has_partner",
            )
        ]
        indexes = [
            # Prompt assembly: curated memories for (agent, partner) and episodic ones per agent.
            models.Index(fields=["agent", "kind", "partner_id"], name="memory_prompt_idx"),
            # The prompt budget for stored entries (memory.services.stored_prompt): an agent's most
            # recently used memories first, read a batch at a time without sorting all of them.
            models.Index(fields=["agent", "kind", "updated"], name="memory_recent_idx"),
            # The same, for the memories written since the history began (ranked by `created`).
            models.Index(fields=["agent", "kind", "created"], name="memory_created_idx"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


class CuratedMemoryFile(models.Model):
    """One curated memory file (`agents/<stem>/memory/<user id>.json`) as a whole.

    Its entries are `Memory` rows; this row keeps what belongs to the file itself, so that export writes
    it back in the shape it came in: a plain JSON list (`envelope` empty), or an object whose "memory"
    key holds the list (`envelope` is that object with its other keys, in order). An empty file `[]`
    has no entries but still has this row.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="curated_memory_files")
    partner_id = models.BigIntegerField(help_text="The partner's Telegram user id (the file name)")
    envelope = models.JSONField(
        null=True, blank=True, help_text='For {"memory": [...], ...} files: the object, "memory" set to null'
    )
    source_file = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["agent", "partner_id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "partner_id"], name="curatedmemoryfile_unique_partner")
        ]

    def __str__(self) -> str:
        return f"memory file {self.partner_id} of {self.agent_id}"


class Plan(models.Model):
    """A `plan` task's content for one channel; shown under "# Channel Plan" in the prompt."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="plans")
    channel_id = models.BigIntegerField()
    topic_id = models.BigIntegerField(
        default=0, help_text="The forum topic of the channel (0: none, or General)"
    )
    plan_id = models.CharField(
        max_length=100,
        default=new_plan_id,
        help_text="The id the agent uses to update or delete this plan (a plan task's id)",
    )
    content = models.TextField()
    created = models.DateTimeField()
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["agent", "channel_id", "created", "id"]
        indexes = [models.Index(fields=["agent", "channel_id"], name="plan_channel_idx")]

    def __str__(self) -> str:
        return self.content[:80]


class Summary(models.Model):
    """A summary of a past stretch of one conversation (a `summarize` task's content).

    It covers the messages `first_message_id` .. `last_message_id` (the task's `min_message_id` and
    `max_message_id`); the prompt's history starts after the highest `last_message_id` of the channel.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="summaries")
    channel_id = models.BigIntegerField()
    topic_id = models.BigIntegerField(
        default=0, help_text="The forum topic of the channel (0: none, or General)"
    )
    entry_id = models.CharField(
        max_length=100, default=new_summary_id, help_text="The id the agent uses to update or delete it"
    )
    content = models.TextField()
    first_message_id = models.BigIntegerField(
        null=True, blank=True, help_text="The first message it covers (min_message_id)"
    )
    last_message_id = models.BigIntegerField(
        null=True, blank=True, help_text="The last message it covers (max_message_id)"
    )
    first_message_date = models.DateField(null=True, blank=True)
    last_message_date = models.DateField(null=True, blank=True)
    created = models.DateTimeField()
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["agent", "channel_id", "first_message_id", "created", "id"]
        verbose_name_plural = "summaries"
        # Prompt assembly (the history start) and the summarization need check after ingest / graphs.
        indexes = [models.Index(fields=["agent", "channel_id"], name="summary_channel_idx")]

    def __str__(self) -> str:
        return self.content[:80]


class Note(models.Model):
    """A `note` task's content: something the agent keeps about one conversation."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="notes")
    channel_id = models.BigIntegerField()
    topic_id = models.BigIntegerField(
        default=0, help_text="The forum topic of the channel (0: none, or General)"
    )
    entry_id = models.CharField(
        max_length=100, default=new_note_id, help_text="The id the agent uses to update or delete it"
    )
    content = models.TextField()
    created = models.DateTimeField()
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["agent", "channel_id", "created", "id"]
        # Prompt assembly: the notes of one (agent, channel).
        indexes = [models.Index(fields=["agent", "channel_id"], name="note_channel_idx")]

    def __str__(self) -> str:
        return self.content[:80]


class Intention(models.Model):
    """The agent's standing goal (`intend`, shown under "# Intentions"), or an `xsend` intent."""

    class Kind(models.TextChoices):
        INTEND = "intend", "Intention"
        XSEND = "xsend", "Cross-chat message"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="intentions")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.INTEND)
    channel_id = models.BigIntegerField(null=True, blank=True, help_text="Target channel, if any")
    entry_id = models.CharField(
        max_length=100, default=new_intention_id, help_text="The id the agent uses to update or delete it"
    )
    content = models.TextField()
    created = models.DateTimeField()
    consumed = models.DateTimeField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # The conversation (peer id) whose turn stored it: only that chat (or an operator's) may change it.
    creation_channel_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["agent", "created", "id"]
        indexes = [
            # Prompt assembly and the xsend trigger: open intentions per agent.
            models.Index(fields=["agent", "consumed"], name="intention_open_idx"),
        ]

    def __str__(self) -> str:
        return self.content[:80]


def new_event_id() -> str:
    return new_entry_id("event")


def new_activity_id() -> str:
    return new_entry_id("act")


class ScheduledEvent(models.Model):
    """An `event` task: an intent for one conversation that fires as a turn at `due_at`.

    The gateway claims a due event with a compare-and-set on (`pk`, `due_at`, `fired_count`) in the
    same transaction that starts the turn, so each occurrence fires once across crashes, takeovers and
    clock jumps (`engine.events`). A recurring event moves `due_at` on by `interval_seconds`; an event
    is deleted after its last occurrence.
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="scheduled_events")
    channel_id = models.BigIntegerField(help_text="The conversation's Telegram peer id")
    topic_id = models.BigIntegerField(
        default=0, help_text="The forum topic of the channel (0: none, or General)"
    )
    entry_id = models.CharField(max_length=100, default=new_event_id, help_text="The event task's id")
    intent = models.TextField(help_text="What the agent told its future self to do")
    time_raw = models.CharField(max_length=64, blank=True, help_text="The event's time as the task gave it")
    timezone = models.CharField(max_length=64, blank=True, help_text="IANA zone for the time; empty: agent's")
    interval_raw = models.CharField(max_length=64, blank=True, help_text='e.g. "2 hours"; empty: once')
    interval_seconds = models.PositiveIntegerField(null=True, blank=True)
    occurrences = models.PositiveIntegerField(
        null=True, blank=True, help_text="Times to fire; empty: until deleted"
    )
    fired_count = models.PositiveIntegerField(default=0)
    due_at = models.DateTimeField(null=True, blank=True, help_text="Next firing (UTC); empty once finished")
    last_fired = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField()

    class Meta:
        ordering = ["agent", "due_at", "id"]
        indexes = [
            # engine.events.events_fire_due / event_next_due: due events of the agents a gateway holds.
            models.Index(fields=["due_at", "agent"], name="event_due_idx"),
            models.Index(fields=["agent", "channel_id"], name="event_channel_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id}: {self.intent[:60]}"

    def save(self, *args, **kwargs) -> None:
        from memory.schedule_times import event_times_apply

        event_times_apply(self)
        super().save(*args, **kwargs)

    @classmethod
    def from_db(cls, db, field_names, values):
        event = super().from_db(db, field_names, values)
        event._original_times = (event.time_raw, event.timezone, event.interval_raw)
        return event


class ScheduleEntry(models.Model):
    """One activity of an agent's daily schedule (a `schedule` task), in the original's fields."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="schedule_entries")
    entry_id = models.CharField(max_length=100, default=new_activity_id, help_text="The schedule task's id")
    activity = models.CharField(max_length=200, help_text="activity_name: what the agent is doing")
    description = models.TextField(blank=True)
    start = models.DateTimeField()
    end = models.DateTimeField()
    responsiveness = models.PositiveSmallIntegerField(
        default=50, help_text="0 (asleep, messages stay unread) to 100 (answers within seconds)"
    )
    created = models.DateTimeField()

    class Meta:
        ordering = ["agent", "start", "id"]
        verbose_name_plural = "schedule entries"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end__gt=models.F("start")), name="schedule_end_after_start"
            ),
            models.CheckConstraint(
                condition=models.Q(responsiveness__lte=100), name="schedule_responsiveness_max"
            ),
        ]
        indexes = [
            # engine.schedule (the reply delay, the dashboard's current activity): entries around now.
            models.Index(fields=["agent", "start", "end"], name="schedule_agent_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.activity} ({self.start:%Y-%m-%d %H:%M}-{self.end:%H:%M})"

    def save(self, *args, **kwargs) -> None:
        from memory.schedule_times import parse_entry_time

        tz = self.agent.timezone
        self.start = parse_entry_time(self.start, agent_timezone=tz, name="start_time")
        self.end = parse_entry_time(self.end, agent_timezone=tz, name="end_time")
        super().save(*args, **kwargs)


class ScheduleRefresh(models.Model):
    """When the agent's daily planning turn is next due (agents whose persona keeps a schedule).

    Claimed by the gateway with a compare-and-set on `due_at`, like events (`engine.schedule_planning`).
    """

    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, related_name="schedule_refresh")
    due_at = models.DateTimeField()
    last_run = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "schedule planning time"
        verbose_name_plural = "schedule planning times"
        indexes = [
            # engine.schedule_planning.schedule_refresh_due: due refreshes of the agents a gateway holds.
            models.Index(fields=["due_at", "agent"], name="schedule_refresh_due_idx"),
        ]

    def __str__(self) -> str:
        return f"schedule refresh of {self.agent_id} due {self.due_at:%Y-%m-%d %H:%M}"
