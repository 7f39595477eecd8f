"""Agents: personas, their role prompts, gateway leases, Telethon session storage and gateway requests.

This app knows nothing about conversations; the engine sits on top of it.
"""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone


class Transport(models.TextChoices):
    TELEGRAM = "telegram", "Telegram"
    SANDBOX = "sandbox", "Sandbox"


class AgentQuerySet(models.QuerySet):
    def update(self, **kwargs):
        """Stamp `updated` as `auto_now` does on `save()` (which `update` skips): the gateway's lease
        step reads only the agents' ids and stamps at most passes, and a row whose stamp changed in
        full (engine/lease_steps.py)."""
        kwargs.setdefault("updated", timezone.now())
        return super().update(**kwargs)


class Agent(models.Model):
    """A persona bound to one Telegram (or sandbox) account.

    The persona fields mirror the original Markdown format one to one, so that export can write the
    file back unchanged. `extra_sections` keeps headings the importer does not know, in file order.
    """

    name = models.CharField(max_length=100, unique=True)
    phone = models.CharField(max_length=32)
    instructions = models.TextField()
    timezone = models.CharField(max_length=64, blank=True, help_text="IANA zone, e.g. Europe/Paris")
    llm = models.CharField(max_length=100, blank=True, help_text="Empty means DEFAULT_AGENT_LLM")
    llm_fallback = models.JSONField(
        default=list,
        blank=True,
        help_text="LLM names tried in order when the LLM fails; empty means CINDY_LLM_FALLBACK",
    )
    role_prompt_names = models.JSONField(default=list, blank=True)
    sticker_set_names = models.JSONField(default=list, blank=True)
    explicit_stickers = models.JSONField(default=list, blank=True, help_text='"SET::NAME" strings')
    daily_schedule = models.TextField(blank=True)
    start_typing_delay = models.FloatField(null=True, blank=True, help_text="Seconds, 1 to 3600")
    typing_speed = models.FloatField(null=True, blank=True, help_text="Characters per second, 1 to 1000")
    telegram_id = models.BigIntegerField(null=True, blank=True, help_text="From the persona file")
    # Spend brakes (engine/brakes.py), the persona's optional "# Spend Limits" section.
    # 6 decimals, as LLM costs are stored: a cap below a cent is kept as typed, not rounded to 0.
    daily_spend_cap = models.DecimalField(
        max_digits=14,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
        help_text="USD per day (TIME_ZONE); planning stops once today's LLM cost reaches it. Empty: no cap",
    )
    partner_turns_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Planning turns (LLM calls) per conversation per minute; more wait. Empty: no limit",
    )
    partner_turns_per_day = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Planning turns per conversation per day (TIME_ZONE); more wait for the next day. Empty: no limit",
    )
    # The persona's optional "# Voice" section (agents/persona_voice.py): how its voice notes sound.
    voice_name = models.CharField(
        max_length=64,
        blank=True,
        help_text="The speech provider's voice, e.g. Kore. Empty: CINDY_SPEECH_VOICE",
    )
    voice_language = models.CharField(
        max_length=35, blank=True, help_text="BCP-47 language of the voice notes, e.g. en-GB. Empty: detected"
    )
    disabled = models.BooleanField(default=False)
    gagged = models.BooleanField(default=False)
    reset_context_on_first_message = models.BooleanField(default=False)
    clear_summaries_on_first_message = models.BooleanField(default=False)
    answer_bots = models.BooleanField(
        default=False, help_text="Bots' messages start turns (otherwise they are recorded, never answered)"
    )
    # The persona's optional "# Recall Across Chats" section (docs/recall.md, Scopes).
    recall_across_chats = models.CharField(
        max_length=8,
        choices=[("off", "Off"), ("dms", "DMs")],
        default="off",
        help_text="Off: a chat recalls only its own history and the agent's global records. "
        "DMs: a direct chat's recall also finds the agent's other direct chats (never groups)",
    )
    hop_limit = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Messages in a row from agents or bots this agent answers in one chat; "
        "empty means CINDY_AGENT_HOP_LIMIT",
    )
    hop_cooldown_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Quiet after which agents' or bots' messages start a new run; "
        "empty means CINDY_AGENT_HOP_COOLDOWN_SECONDS",
    )
    extra_sections = models.JSONField(
        default=list, blank=True, help_text="Unknown headings, as [heading, body] pairs in file order"
    )
    flag_notes = models.JSONField(
        default=dict, blank=True, help_text="Text written under flag headings (# Disabled ...), by heading"
    )
    config_name = models.CharField(
        max_length=255,
        blank=True,
        db_index=True,
        help_text="The persona file's stem (agents/<stem>.md): its identity across config directories",
    )

    telegram_user_id = models.BigIntegerField(
        null=True, blank=True, help_text="The account's user id, recorded at login"
    )
    telegram_username = models.CharField(max_length=64, blank=True)
    transport = models.CharField(max_length=16, choices=Transport.choices, default=Transport.SANDBOX)

    source_file = models.CharField(max_length=500, blank=True)
    config_dir = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)

    stopped = models.BooleanField(default=False, help_text="Stopped by a shutdown task or an auth error")
    last_error = models.TextField(blank=True)
    last_error_at = models.DateTimeField(null=True, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(start_typing_delay__isnull=True)
                | Q(start_typing_delay__gte=1, start_typing_delay__lte=3600),
                name="agent_start_typing_delay_range",
            ),
            models.CheckConstraint(
                condition=Q(typing_speed__isnull=True) | Q(typing_speed__gte=1, typing_speed__lte=1000),
                name="agent_typing_speed_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return not (self.disabled or self.stopped)


class RolePrompt(models.Model):
    """A named prompt. Global when `agent` is empty, otherwise it overrides the global one for that agent.

    `scope_key` is 0 for global prompts and the agent id otherwise; it exists so that uniqueness of
    (scope, name) is a plain unique constraint that MySQL enforces too (MySQL has no partial indexes).
    """

    name = models.CharField(max_length=200)
    text = models.TextField()
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="prompts")
    scope_key = models.BigIntegerField(default=0, editable=False)
    origin_dir = models.CharField(max_length=500, blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["scope_key", "name"], name="roleprompt_unique_per_scope")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent.name if self.agent_id else 'global'})"

    def save(self, *args, **kwargs):
        self.scope_key = self.agent_id or 0
        super().save(*args, **kwargs)

    @property
    def scope(self) -> str:
        return self.agent.name if self.agent_id else "global"


class AgentDocument(models.Model):
    """A document the agent can read with a `file:NAME` retrieve URL: `agents/NAME/docs/*.md` on disk.

    `name` is the file name as it appears in the docs folder (e.g. `Friends.md`).
    """

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=255, help_text="File name in the agent's docs folder, e.g. Friends.md")
    content = models.TextField(blank=True)
    source_file = models.CharField(max_length=500, blank=True)
    content_hash = models.CharField(max_length=64, blank=True)
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="agentdocument_unique_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.agent})"


class AgentLease(models.Model):
    """Which gateway drives an agent. One account, one connection: a live lease refuses others."""

    agent = models.OneToOneField(Agent, on_delete=models.CASCADE, primary_key=True, related_name="lease")
    holder = models.CharField(max_length=200, help_text="Gateway id: host:pid:nonce")
    acquired_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField()
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [
            # runagents' lease takeover scan: expired leases of agents it wants.
            models.Index(fields=["expires_at"], name="agentlease_expires_idx"),
            models.Index(fields=["holder"], name="agentlease_holder_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} held by {self.holder}"


class TelegramSession(models.Model):
    """Telethon session state for one agent. The auth key is encrypted at rest (CINDY_SESSION_KEY)."""

    agent = models.OneToOneField(
        Agent, on_delete=models.CASCADE, primary_key=True, related_name="telegram_session"
    )
    dc_id = models.IntegerField(default=0)
    server_address = models.CharField(max_length=100, blank=True)
    port = models.IntegerField(default=443)
    auth_key_encrypted = models.BinaryField(null=True, blank=True, editable=False)
    takeout_id = models.BigIntegerField(null=True, blank=True)
    updated = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Telegram session of {self.agent}"


class TelegramUpdateState(models.Model):
    """Telethon's update state (pts/qts/date/seq) per entity; entity_id 0 is the account's common state."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="telegram_update_states")
    entity_id = models.BigIntegerField()
    pts = models.BigIntegerField()
    qts = models.BigIntegerField()
    date = models.DateTimeField()
    seq = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "entity_id"], name="tg_update_state_unique")]

    def __str__(self) -> str:
        return f"update state {self.entity_id} of {self.agent_id}"


class TelegramEntity(models.Model):
    """Telethon's entity cache (id, access hash, username, phone, name), persisted per agent."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="telegram_entities")
    entity_id = models.BigIntegerField()
    access_hash = models.BigIntegerField()
    username = models.CharField(max_length=64, blank=True, null=True)  # noqa: DJ001 (Telethon stores None)
    phone = models.CharField(max_length=32, blank=True, null=True)  # noqa: DJ001 (Telethon stores None)
    name = models.CharField(max_length=255, blank=True, null=True)  # noqa: DJ001 (Telethon stores None)
    date = models.BigIntegerField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "Telegram entities"
        constraints = [models.UniqueConstraint(fields=["agent", "entity_id"], name="tg_entity_unique")]
        indexes = [
            models.Index(fields=["agent", "username"], name="tg_entity_username_idx"),
            models.Index(fields=["agent", "phone"], name="tg_entity_phone_idx"),
        ]

    def __str__(self) -> str:
        return f"entity {self.entity_id} of {self.agent_id}"


class GatewayRequest(models.Model):
    """Work that web or worker code needs done on Telegram; the gateway holding the agent runs it."""

    class Kind(models.TextChoices):
        SEND_OTP = "send_otp", "Send a one-time code"
        IMPORT_STICKER_SET = "import_sticker_set", "Import a sticker set"
        REFRESH_PROFILE = "refresh_profile", "Refresh a profile"
        SET_MUTED = "set_muted", "Mute or unmute a chat"
        JOIN_CHAT = "join_chat", "Join a channel or group"
        LEAVE_CHAT = "leave_chat", "Leave a channel or group"
        READ_ACCOUNT = "read_account", "Read the profile and contacts"
        UPDATE_PROFILE = "update_profile", "Change the profile"
        ADD_PROFILE_PHOTO = "add_profile_photo", "Add a profile photo"
        DELETE_PROFILE_PHOTO = "delete_profile_photo", "Delete a profile photo"
        ADD_CONTACT = "add_contact", "Add a contact"
        DELETE_CONTACTS = "delete_contacts", "Delete contacts"
        SIGN_IN_START = "sign_in_start", "Sign in: send the code"
        SIGN_IN_CODE = "sign_in_code", "Sign in: check the code"
        SIGN_IN_PASSWORD = "sign_in_password", "Sign in: check the password"
        SAVE_TO_LIBRARY = "save_to_library", "Save media to the library"
        BACKFILL_PAGE = "backfill_page", "Fetch a page of older history"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="gateway_requests")
    kind = models.CharField(max_length=32, choices=Kind.choices)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    claimed_by = models.CharField(max_length=200, blank=True)
    # A claim is a lease: a request whose gateway died is returned to pending once it expires.
    claim_expires = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0, help_text="How many times a gateway claimed it")
    created = models.DateTimeField()
    finished = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]
        indexes = [
            # runagents' request pollers: pending requests for the agents it holds, oldest first
            # (the requests step), and pending sign-in steps of agents it may run (the signin step); running
            # sign-in steps whose claim expired, of any agent (signin_requests_reap_expired).
            models.Index(fields=["status", "agent", "created"], name="gwrequest_pending_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} via {self.agent} ({self.status})"
