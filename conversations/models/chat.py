"""The DB mirror of what an agent sees on Telegram: conversations and their messages."""

from __future__ import annotations

from django.db import models

from agents.models import Agent

#: How the agent's own chat (peer id = its own user id) is shown, as Telegram's apps name it.
SAVED_MESSAGES_TITLE = "Saved Messages"
#: Telegram's own service account: it sends login codes and security notices, and is never a
#: conversation partner (no turn starts for it, it is no "user", its codes are redacted).
TELEGRAM_SERVICE_USER_ID = 777000


class Conversation(models.Model):
    class Kind(models.TextChoices):
        DM = "dm", "Direct message"
        GROUP = "group", "Group"
        CHANNEL = "channel", "Channel"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conversations")
    peer_id = models.BigIntegerField(help_text="Telegram peer id (user id for DMs)")
    topic_id = models.BigIntegerField(
        default=0,
        help_text="In a forum group, the topic's id (its top message id); 0 for the whole chat: DMs, plain "
        "groups and a forum's General topic",
    )
    topic_title = models.CharField(max_length=255, blank=True, help_text="The forum topic's title")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    title = models.CharField(max_length=255, blank=True)
    username = models.CharField(max_length=64, blank=True)
    muted = models.BooleanField(default=False)
    blocked = models.BooleanField(default=False)
    gagged = models.BooleanField(
        default=False, help_text="Messages are still recorded, but the agent does not act in this chat"
    )
    answer_bots = models.BooleanField(
        default=False,
        help_text="Bots' messages in this chat start turns, whatever the agent's Answer Bots flag says",
    )
    llm_model = models.CharField(
        max_length=100, blank=True, help_text="Per-conversation LLM override; beats the agent's LLM"
    )
    last_read_message_id = models.BigIntegerField(null=True, blank=True)
    history_window_start_id = models.BigIntegerField(
        null=True,
        blank=True,
        help_text="The first message id of the prompt's history window, kept until the window overflows",
    )
    partner_typing_until = models.DateTimeField(
        null=True, blank=True, help_text="The DM partner is typing until then; the agent's reply waits"
    )
    details = models.JSONField(default=dict, blank=True, help_text="Channel details for the prompt")
    cannot_write = models.CharField(
        max_length=200,
        blank=True,
        help_text="Why the account cannot write here (read-only channel, restricted, banned); empty when it can",
    )
    partner_in_contacts = models.BooleanField(
        default=False, help_text="The DM partner is in the account's contacts (added on the first turn)"
    )
    last_message_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-last_message_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "peer_id", "topic_id"], name="conversation_unique_peer_topic"
            )
        ]
        indexes = [
            # The dashboard lists an agent's conversations by recent activity.
            models.Index(fields=["agent", "last_message_at"], name="conversation_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.agent.name} ↔ {self.display_title}"

    @property
    def is_saved_messages(self) -> bool:
        """The agent's chat with itself (Telegram's Saved Messages), where its planning turns run."""
        return self.agent.telegram_user_id is not None and self.peer_id == self.agent.telegram_user_id

    @property
    def is_telegram_service(self) -> bool:
        """The DM with Telegram's service account (login codes, security notices)."""
        return self.peer_id == TELEGRAM_SERVICE_USER_ID

    @property
    def display_title(self) -> str:
        """The title operators read: "Saved Messages" for the agent's own chat (Telegram titles it
        with the agent's own name), otherwise the title, or the peer id when there is none; a forum
        topic is "Group › Topic"."""
        if self.is_saved_messages:
            return SAVED_MESSAGES_TITLE
        title = self.title or str(self.peer_id)
        if self.topic_id:
            return f"{title} › {self.topic_title or f'topic {self.topic_id}'}"
        return title

    @property
    def is_topic(self) -> bool:
        """A forum topic: its own conversation, on the group's peer (`topic_id` says which)."""
        return bool(self.topic_id)


class Message(models.Model):
    """One Telegram message, upserted on (conversation, message_id) before anything else happens.

    `media` is a list of media parts: {"kind": "media", "media_kind": ..., "unique_id": ..., ...}, written
    by `MediaItem.to_part()` and read through `media_catalog.parts.media_items` (typed, checked once).
    `reactions` is a list of {"emoji": ..., "count": ..., "user_ids": [...], "unread": bool}.
    """

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    message_id = models.BigIntegerField()
    sender_id = models.BigIntegerField(null=True, blank=True)
    sender_name = models.CharField(max_length=255, blank=True)
    sender_username = models.CharField(max_length=64, blank=True)
    sender_is_bot = models.BooleanField(default=False)
    is_agent = models.BooleanField(default=False)
    date = models.DateTimeField()
    text = models.TextField(blank=True)
    reply_to_id = models.BigIntegerField(null=True, blank=True)
    media = models.JSONField(default=list, blank=True)
    reactions = models.JSONField(default=list, blank=True)
    mentions_agent = models.BooleanField(default=False)
    forwarded_from = models.CharField(max_length=255, blank=True)
    is_service = models.BooleanField(default=False)
    edited = models.BooleanField(default=False)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted = models.BooleanField(default=False)
    random_id = models.BigIntegerField(null=True, blank=True, help_text="For messages the agent sent")
    redacted = models.BooleanField(
        default=False,
        help_text="The text is a placeholder (a one-time sign-in code was sent); re-ingest never restores it",
    )
    ingested = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["conversation", "date", "message_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "message_id"], name="message_unique_per_conversation"
            )
        ]
        indexes = [
            # Prompt assembly reads the newest N messages of a conversation.
            models.Index(fields=["conversation", "-message_id"], name="message_history_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.message_id} {self.sender_name}: {self.text[:60]}"
