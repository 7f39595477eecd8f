"""The sandbox's models: a DB-backed stand-in for Telegram, used by the browser sandbox chat and by tests.

A `SandboxChat` is a DM or group as Telegram itself would hold it (not as one agent sees it): the
agent is a member like anybody else, and message ids are per chat, as in Telegram's basic groups.
"""

from __future__ import annotations

from django.db import models

from agents.models import Agent


class SandboxUser(models.Model):
    """A simulated Telegram user. Agents on the sandbox transport have one too (`agent`)."""

    user_id = models.BigIntegerField(unique=True)
    name = models.CharField(max_length=255)
    username = models.CharField(max_length=64, blank=True)
    is_bot = models.BooleanField(default=False, help_text="A bot account, as Telegram flags it")
    agent = models.OneToOneField(
        Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="sandbox_user"
    )
    blocked_user_ids = models.JSONField(default=list, blank=True)
    # The account's profile as Telegram would keep it (read and changed through the transport).
    last_name = models.CharField(max_length=255, blank=True)
    about = models.CharField(max_length=140, blank=True)
    photos = models.JSONField(default=list, blank=True, help_text="[{id, path, date}], newest first")
    contact_user_ids = models.JSONField(default=list, blank=True)
    online = models.BooleanField(default=False, help_text="Shown online, as the account last set it")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class SandboxChat(models.Model):
    class Kind(models.TextChoices):
        DM = "dm", "Direct message"
        GROUP = "group", "Group"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    peer_id = models.BigIntegerField(unique=True, help_text="Group peer id (DMs use the user ids)")
    title = models.CharField(max_length=255, blank=True)
    # A public group is joined by its username, a private one by its invite link's hash.
    username = models.CharField(max_length=64, blank=True)
    invite_hash = models.CharField(max_length=64, blank=True)
    forum = models.BooleanField(default=False, help_text="A group with topics (a forum supergroup)")
    members = models.ManyToManyField(SandboxUser, through="SandboxMember", related_name="chats")
    next_message_id = models.BigIntegerField(default=1)
    created = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.title or f"{self.kind} {self.peer_id}"


class SandboxTopic(models.Model):
    """A topic of a forum group. Its id is a message id of the chat, as on Telegram (there, the id of
    the topic's creation message); messages in the General topic have none."""

    chat = models.ForeignKey(SandboxChat, on_delete=models.CASCADE, related_name="topics")
    topic_id = models.BigIntegerField()
    title = models.CharField(max_length=128)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["chat", "topic_id"]
        constraints = [
            models.UniqueConstraint(fields=["chat", "topic_id"], name="sandbox_topic_unique_id"),
            models.UniqueConstraint(fields=["chat", "title"], name="sandbox_topic_unique_title"),
        ]

    def __str__(self) -> str:
        return f"{self.chat} › {self.title}"


class SandboxMember(models.Model):
    chat = models.ForeignKey(SandboxChat, on_delete=models.CASCADE)
    user = models.ForeignKey(SandboxUser, on_delete=models.CASCADE)
    muted = models.BooleanField(default=False)
    typing_until = models.DateTimeField(null=True, blank=True)
    read_up_to = models.BigIntegerField(default=0)
    unread_mark = models.BooleanField(
        default=False,
        help_text="The member marked the chat unread (Telegram's unread_mark); reading clears it",
    )
    cannot_write = models.CharField(
        max_length=16,
        blank=True,
        choices=[("read_only", "Read-only channel"), ("restricted", "Restricted"), ("banned", "Banned")],
        help_text="Why this member may not write in the chat, as a Telegram admin would set it",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chat", "user"], name="sandbox_member_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.chat}"


class SandboxMessage(models.Model):
    chat = models.ForeignKey(SandboxChat, on_delete=models.CASCADE, related_name="messages")
    message_id = models.BigIntegerField()
    sender = models.ForeignKey(SandboxUser, on_delete=models.CASCADE, related_name="sandbox_messages")
    date = models.DateTimeField()
    text = models.TextField(blank=True)
    reply_to_id = models.BigIntegerField(null=True, blank=True)
    topic_id = models.BigIntegerField(
        null=True, blank=True, help_text="The forum topic it was posted in (none: General, or no forum)"
    )
    media = models.JSONField(default=list, blank=True, help_text="Sticker or photo parts")
    reactions = models.JSONField(default=list, blank=True)
    random_id = models.BigIntegerField(null=True, blank=True)
    edited = models.BooleanField(default=False)
    deleted = models.BooleanField(default=False)

    class Meta:
        ordering = ["chat", "message_id"]
        constraints = [
            models.UniqueConstraint(fields=["chat", "message_id"], name="sandbox_message_unique"),
            # Telegram dedupes sends by (sender, random_id); so does the sandbox.
            models.UniqueConstraint(fields=["sender", "random_id"], name="sandbox_random_id_unique"),
        ]
        indexes = [
            # SandboxTransport's update poll: new messages of a chat after an id.
            models.Index(fields=["chat", "message_id"], name="sandbox_message_poll_idx"),
        ]

    def __str__(self) -> str:
        return f"#{self.message_id} {self.sender}: {self.text[:60]}"


class SandboxUpdate(models.Model):
    """An append-only log of sandbox changes, read by SandboxTransport as its update stream.

    It plays the part of Telegram's pts: a transport remembers the last id it handled and asks for
    what came after, so nothing is missed while the gateway is down.
    """

    class Kind(models.TextChoices):
        NEW_MESSAGE = "new_message", "New message"
        EDIT = "edit", "Edit"
        DELETE = "delete", "Delete"
        REACTION = "reaction", "Reaction"
        TYPING = "typing", "Typing"
        UNREAD_MARK = "unread_mark", "Marked unread"  # seen only by its actor, as on Telegram

    chat = models.ForeignKey(SandboxChat, on_delete=models.CASCADE, related_name="updates")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    message_id = models.BigIntegerField(null=True, blank=True)
    actor = models.ForeignKey(SandboxUser, null=True, blank=True, on_delete=models.CASCADE)
    created = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [
            # SandboxTransport.updates(): the updates of one chat after a cursor id.
            models.Index(fields=["chat", "id"], name="sandbox_update_poll_idx"),
            # The poll's trailing window (`id > cursor - N OR created >= now - T`), read at every
            # gateway pass: without it each read scanned the whole log; and retention's cutoff.
            models.Index(fields=["created"], name="sandbox_update_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.chat} (message {self.message_id})"
