"""The recall index: everything an agent has seen or written, searchable in its own database.

One `RecallEntry` per message, summary, memory, note, intention, plan and document section. The
full-text index over it is made per database by migration 0002: an FTS5 table kept in step by
triggers on SQLite (the text, and `terms`, each word prefixed with its scope, in its scope column:
migration 0009), an InnoDB FULLTEXT index on `terms` (each word plain and prefixed with its scope)
on MariaDB/MySQL; `recall/fulltext.py` says why.
"""

from __future__ import annotations

from django.db import models

from agents.models import Agent
from conversations.models import Conversation, Message


class EntryKind(models.TextChoices):
    MESSAGE = "message", "Message"
    SUMMARY = "summary", "Summary"
    MEMORY = "memory", "Memory"
    NOTE = "note", "Note"
    INTENTION = "intention", "Intention"
    PLAN = "plan", "Plan"
    DOCUMENT = "document", "Document section"


class RecallEntry(models.Model):
    """One searchable piece of the agent's past.

    Scope: `peer_id` (with `topic_id`) is the chat the entry belongs to, as the memory app names
    chats (a curated memory's partner, a note's channel); NULL means the agent's global records
    (its episodic memories, intentions and documents), which every conversation of the agent may
    recall. `conversation` is set for messages only, whose entries go with their conversation; a
    note or summary outlives its conversation's row as its record does, and a search names its
    conversation from the scope (`recall.selectors`).
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    peer_id = models.BigIntegerField(null=True, blank=True, help_text="The chat's peer id; empty: global")
    topic_id = models.BigIntegerField(default=0, help_text="The forum topic within the chat (0: none)")
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    source_id = models.BigIntegerField(help_text="The primary key of the message, memory, note, ... row")
    part = models.PositiveIntegerField(default=0, help_text="A document's section number (0 otherwise)")
    message_id = models.BigIntegerField(null=True, blank=True, help_text="The Telegram message id")
    date = models.DateTimeField()
    text = models.TextField()
    terms = models.TextField(
        blank=True,
        help_text="The text's stemmed words for the full-text index (recall.fulltext): plain "
        "and prefixed with the entry's scope on MariaDB/MySQL, prefixed on SQLite",
    )
    # On MariaDB/MySQL a VARBINARY(512) in the vector scan's covering index (migration 0011): a
    # migration that alters this field there must drop that index first and make both again.
    vector = models.BinaryField(
        null=True,
        blank=True,
        help_text="The text's meaning: a unit vector of 256 float16 values (recall.embedding); "
        "empty when CINDY_RECALL_VECTORS was off as it was written",
    )

    class Meta:
        verbose_name_plural = "recall entries"
        constraints = [
            models.UniqueConstraint(fields=["kind", "source_id", "part"], name="recall_entry_unique_source")
        ]
        indexes = [
            # recall.search: the scope filter of a search (an agent's entries of one chat and its globals).
            models.Index(fields=["agent", "peer_id", "topic_id"], name="recall_entry_scope_idx"),
            # recall.services: a cleared conversation drops its messages' entries.
            models.Index(fields=["conversation", "kind"], name="recall_entry_conversation_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.source_id}: {self.text[:60]}"


class RecallBuild(models.Model):
    """Where `manage.py recall_index` got to for one agent and kind: the highest source primary key
    indexed, so an interrupted build resumes after it."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    last_source_id = models.BigIntegerField(default=0)
    indexed = models.PositiveIntegerField(default=0, help_text="Entries written by builds so far")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "kind"], name="recall_build_unique_kind")]

    def __str__(self) -> str:
        return f"recall build of {self.agent_id} {self.kind}: after {self.last_source_id}"


class RecallMediaWait(models.Model):
    """A message indexed before the media catalog could say what one of its media shows: when that
    description is written, the message is indexed again with it (`recall.services.media_described`)."""

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    unique_id = models.CharField(max_length=128)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["message", "unique_id"], name="recall_media_wait_unique")
        ]
        indexes = [
            # recall.services.media_described: the messages waiting for one media's description.
            models.Index(fields=["unique_id"], name="recall_media_wait_uid_idx")
        ]

    def __str__(self) -> str:
        return f"message {self.message_id} waits for {self.unique_id}"


class RecallProviderVector(models.Model):
    """An entry's meaning as a provider's embedding model gives it (CINDY_RECALL_EMBEDDINGS), beside
    the local vector (`RecallEntry.vector`). One row per entry and model, so a new model never mixes
    its vectors with another's: a search reads only the rows of the model set now.

    `digest` is a hash of the text the vector was made from: a search drops a vector whose entry's
    text has changed since (an edited message), and the next fill embeds the new text
    (`recall.provider_vectors`)."""

    entry = models.ForeignKey(RecallEntry, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(
        max_length=100, help_text="The embedding model, as CINDY_RECALL_EMBEDDINGS names it"
    )
    digest = models.CharField(
        max_length=16, help_text="A hash of the text embedded (recall.provider_vectors)"
    )
    vector = models.BinaryField(help_text="A unit vector of little-endian float16 values")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["entry", "model"], name="recall_provider_vector_unique")
        ]

    def __str__(self) -> str:
        return f"{self.model} vector of entry {self.entry_id}"


class RecallEmbeddingFill(models.Model):
    """Where the fill of one embedding model's vectors stands (`recall.provider_vectors`): how many
    entries its runs have embedded, and, while a run is under way, until when that run holds the
    claim, so that two workers never pay for the same entries."""

    model = models.CharField(max_length=100, unique=True)
    claimed_until = models.DateTimeField(null=True, blank=True)
    embedded = models.PositiveIntegerField(default=0, help_text="Entries embedded by the runs so far")
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.model} fill: {self.embedded} embedded"
