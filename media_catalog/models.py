"""Media catalog: descriptions of stickers, photos and other media, and the sticker sets agents use.

Curated descriptions are written by people and always win over AI-generated ones.
"""

from __future__ import annotations

from django.db import models


class MediaKind(models.TextChoices):
    """Every kind cw-telegram-agent writes in its media descriptions, plus custom emoji and other."""

    STICKER = "sticker", "Sticker"
    ANIMATED_STICKER = "animated_sticker", "Animated sticker (TGS)"
    VIDEO_STICKER = "video_sticker", "Video sticker (WebM)"
    PHOTO = "photo", "Photo"
    GIF = "gif", "GIF"
    ANIMATION = "animation", "Animation"
    VIDEO = "video", "Video"
    VIDEO_NOTE = "video_note", "Video note"
    VOICE = "voice", "Voice"
    AUDIO = "audio", "Audio"
    DOCUMENT = "document", "Document"
    CUSTOM_EMOJI = "custom_emoji", "Custom emoji"
    OTHER = "other", "Other"


STICKER_KINDS = (MediaKind.STICKER, MediaKind.ANIMATED_STICKER, MediaKind.VIDEO_STICKER)


class MediaDescription(models.Model):
    class Status(models.TextChoices):
        CURATED = "curated", "Curated"
        OK = "ok", "OK"
        TIMEOUT = "timeout", "Timeout"
        ERROR = "error", "Error"
        NOT_UNDERSTOOD = "not_understood", "Not understood"
        UNSUPPORTED = "unsupported", "Unsupported"

    class Source(models.TextChoices):
        CURATED = "curated", "Curated"
        AI = "ai", "AI"

    unique_id = models.CharField(max_length=128, unique=True)
    kind = models.CharField(max_length=32, choices=MediaKind.choices, default=MediaKind.OTHER)
    sticker_set_name = models.CharField(max_length=128, blank=True)
    sticker_set_title = models.CharField(max_length=255, blank=True)
    sticker_name = models.CharField(max_length=64, blank=True)
    description = models.TextField(null=True, blank=True)  # noqa: DJ001 (None: nothing could be said)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OK)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.AI)
    mime = models.CharField(max_length=100, blank=True)
    duration = models.FloatField(null=True, blank=True, help_text="Seconds, for video and audio")
    language = models.CharField(
        max_length=32, blank=True, help_text="A transcript's language (voice notes, audio, video notes)"
    )
    file = models.FileField(upload_to="media_catalog/", blank=True)
    origin_dir = models.CharField(max_length=500, blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    extra = models.JSONField(default=dict, blank=True, help_text="Unknown JSON fields, kept as they came")
    key_order = models.JSONField(
        default=list, blank=True, help_text="The keys of the curated file in their order, for export"
    )
    content_hash = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sticker_set_name", "sticker_name", "unique_id"]
        indexes = [
            models.Index(fields=["sticker_set_name", "sticker_name"], name="mediadesc_sticker_idx"),
            models.Index(fields=["status", "source"], name="mediadesc_status_idx"),
        ]

    def __str__(self) -> str:
        label = f"{self.sticker_set_name} :: {self.sticker_name}" if self.sticker_set_name else self.kind
        return f"{label} ({self.unique_id})"

    @property
    def is_curated(self) -> bool:
        return self.source == self.Source.CURATED


class StickerSet(models.Model):
    short_name = models.CharField(max_length=128, unique=True)
    title = models.CharField(max_length=255, blank=True)
    telegram_set_id = models.BigIntegerField(null=True, blank=True)
    access_hash = models.BigIntegerField(null=True, blank=True)
    is_animated = models.BooleanField(default=False)
    is_video = models.BooleanField(default=False)
    fetched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["short_name"]

    def __str__(self) -> str:
        return self.short_name


class Sticker(models.Model):
    class Format(models.TextChoices):
        STATIC = "static", "Static (WebP)"
        ANIMATED = "animated", "Animated (TGS)"
        VIDEO = "video", "Video (WebM)"

    sticker_set = models.ForeignKey(StickerSet, on_delete=models.CASCADE, related_name="stickers")
    name = models.CharField(max_length=64, help_text="The sticker's emoji or alias")
    unique_id = models.CharField(max_length=128)
    document_id = models.BigIntegerField(null=True, blank=True)
    access_hash = models.BigIntegerField(null=True, blank=True)
    file_reference = models.BinaryField(null=True, blank=True, editable=False)
    format = models.CharField(max_length=16, choices=Format.choices, default=Format.STATIC)
    mime = models.CharField(max_length=100, blank=True)
    file = models.FileField(upload_to="stickers/", blank=True)
    position = models.PositiveIntegerField(default=0)
    premium = models.BooleanField(
        default=False, help_text="Only Telegram Premium accounts can send it (it has a premium animation)"
    )

    class Meta:
        ordering = ["sticker_set", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["sticker_set", "unique_id"], name="sticker_unique_in_set")
        ]
        indexes = [
            # The sticker handler resolves (set, name).
            models.Index(fields=["sticker_set", "name"], name="sticker_name_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.sticker_set.short_name} :: {self.name}"


class StickerAccess(models.Model):
    """What the agent's Telegram account may send beyond its configured sets, as the gateway last saw it.

    `premium`: whether the account has Telegram Premium (premium stickers are offered only then).
    `saved_stickers`: the stickers in the account's Saved Messages that belong to a set, as
    `{"set": short name, "name": emoji, "unique_id": ...}`; they join the agent's sticker list.
    """

    agent = models.OneToOneField("agents.Agent", on_delete=models.CASCADE, related_name="sticker_access")
    premium = models.BooleanField(default=False)
    saved_stickers = models.JSONField(default=list, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "sticker access"

    def __str__(self) -> str:
        return f"{self.agent_id}: premium={self.premium}, {len(self.saved_stickers)} saved stickers"


class LibraryItem(models.Model):
    """One item of an agent's media library: what `send_media` (alias `photo`) may send.

    On Telegram the library is the account's Saved Messages (`saved_message_id`), listed by the
    gateway; in the sandbox it is files uploaded in the admin (`file`). The curated `description` is
    what the prompt lists beside the `unique_id` the agent names.
    """

    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="media_library")
    unique_id = models.CharField(max_length=128, help_text="Telegram's file_unique_id, or the upload's id")
    kind = models.CharField(max_length=32, choices=MediaKind.choices, default=MediaKind.PHOTO)
    description = models.TextField(blank=True, help_text="Curated: shown to the agent in its prompt")
    file = models.FileField(upload_to="media_library/", blank=True, help_text="Sandbox: the file to send")
    mime = models.CharField(max_length=100, blank=True)
    saved_message_id = models.BigIntegerField(
        null=True, blank=True, help_text="Telegram: the Saved Messages message holding the media"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent", "unique_id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "unique_id"], name="libraryitem_unique_per_agent")
        ]

    def __str__(self) -> str:
        return f"{self.unique_id}: {self.description[:60]}"
