"""Admin for personas and what keeps them running: prompts, leases, sessions, gateway requests, OTP devices."""

from __future__ import annotations

from datetime import datetime

from django.contrib import admin, messages
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from agents.admin_parts import agent_inline_saver, agent_inlines
from agents.admin_restart import AgentRestartMixin
from agents.forms import AgentForm
from agents.models import (
    Agent,
    AgentDocument,
    AgentLease,
    GatewayRequest,
    RolePrompt,
    TelegramEntity,
    TelegramSession,
    TelegramUpdateState,
)
from agents.models.otp_device import TelegramDevice
from agents.selectors import agent_notices, agents_by_phone, phone_sharer_that_runs
from agents.services import curation
from agents.telegram_pages import TelegramPagesMixin
from cindy_site import clock
from cindy_site.admin_utils import ReadOnlyAdmin, change_link, changelist_link, html_row, service_form, short


class RolePromptInline(admin.StackedInline):
    model = RolePrompt
    fk_name = "agent"
    extra = 0
    fields = ["name", "text", "origin_dir", "source_file"]
    readonly_fields = ["origin_dir", "source_file"]
    verbose_name = "agent-specific role prompt"
    form = service_form(lambda obj: curation.role_prompt_validate(prompt=obj))


class AgentDocumentInline(admin.StackedInline):
    """The agent's documents (`agents/NAME/docs/*.md`), read with `file:NAME` retrieve URLs."""

    model = AgentDocument
    extra = 0
    fields = ["name", "content"]
    verbose_name = "document"
    form = service_form(lambda obj: curation.agent_document_validate(document=obj))


def _lease_state(agent: Agent) -> str:
    lease = getattr(agent, "lease", None)
    if lease is None:
        return "offline"
    return "online" if lease.expires_at > clock.now() else "lease expired"


def _local(moment: datetime, pattern: str) -> str:
    return timezone.localtime(moment).strftime(pattern)


@admin.register(Agent)
class AgentAdmin(AgentRestartMixin, TelegramPagesMixin, admin.ModelAdmin):
    form = AgentForm
    change_form_template = "admin/agents/agent/change_form.html"
    list_display = [
        "name",
        "transport",
        "telegram_account",
        "state",
        "llm_display",
        "related",
    ]
    list_filter = ["transport", "disabled", "gagged", "stopped", "config_dir"]
    search_fields = ["name", "phone", "telegram_username", "=telegram_user_id", "instructions"]
    readonly_fields = [
        "config_name",
        "telegram_user_id",
        "telegram_username",
        "source_file",
        "config_dir",
        "content_hash",
        "run_state",
        "last_error",
        "last_error_at",
        "lease_display",
        "created",
        "updated",
        "related",
        "effective_prompts",
    ]
    fieldsets = [
        (None, {"fields": ["name", "phone", "transport", "instructions"]}),
        (
            "Persona",
            {
                "fields": [
                    "timezone",
                    "timezone_change",
                    "llm",
                    "llm_fallback",
                    "role_prompt_names",
                    "effective_prompts",
                    "sticker_set_names",
                    "explicit_stickers",
                    "daily_schedule",
                    "start_typing_delay",
                    "typing_speed",
                    "voice_name",
                    "voice_language",
                    "telegram_id",
                    "extra_sections",
                ]
            },
        ),
        (
            "Spend brakes",
            {
                "fields": ["daily_spend_cap", "partner_turns_per_minute", "partner_turns_per_day"],
                "description": "Planning stops while a cap or limit is reached (the installation's own "
                "daily cap is CINDY_DAILY_SPEND_CAP_USD); it resumes the next day, or at once when a "
                "cap is raised here.",
            },
        ),
        (
            "Flags",
            {
                "fields": [
                    "disabled",
                    "gagged",
                    "reset_context_on_first_message",
                    "clear_summaries_on_first_message",
                    "answer_bots",
                    "recall_across_chats",
                    "flag_notes",
                    "hop_limit",
                    "hop_cooldown_seconds",
                ]
            },
        ),
        (
            "Runtime (read-only)",
            {
                "fields": [
                    "telegram_user_id",
                    "telegram_username",
                    "lease_display",
                    "run_state",
                    "last_error",
                    "last_error_at",
                    "related",
                ]
            },
        ),
        (
            "Origin",
            {
                "classes": ["collapse"],
                "fields": ["config_name", "source_file", "config_dir", "content_hash", "created", "updated"],
            },
        ),
    ]
    inlines = [RolePromptInline, AgentDocumentInline]
    actions = ["disable_agents", "enable_agents"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("lease")

    def get_inlines(self, request, obj):
        # Then what the apps above agents add (the agent's memories): agents/admin_parts.py.
        return [*super().get_inlines(request, obj), *agent_inlines()]

    @admin.display(description="Telegram")
    def telegram_account(self, agent: Agent) -> str:
        if agent.telegram_username:
            return f"@{agent.telegram_username}"
        return str(agent.telegram_user_id or agent.telegram_id or "-")

    @admin.display(description="Gateway")
    def state(self, agent: Agent, shared: dict[int, list[str]] | None = None) -> str:
        """The lease state and any flag that keeps the agent quiet, in one column (the list filters
        by each flag): separate boolean columns squeezed the See links into four lines. `shared`:
        the other enabled Telegram agents on each such agent's phone (only one of them can run)."""
        flags = [flag for flag in ("disabled", "stopped", "gagged") if getattr(agent, flag)]
        if shared and agent.pk in shared:
            flags.append("phone shared with " + ", ".join(shared[agent.pk]))
        return " · ".join([_lease_state(agent), *flags])

    def get_list_display(self, request):
        """The list with the phones that enabled agents share, read once per page."""
        shared: dict[int, list[str]] = {}
        for agents in agents_by_phone(running_on_telegram=True).values():
            for one in agents:
                shared[one.pk] = [other.name for other in agents if other.pk != one.pk]

        @admin.display(description="Gateway")
        def state(agent: Agent) -> str:
            return self.state(agent, shared)

        return [state if name == "state" else name for name in super().get_list_display(request)]

    @admin.display(description="LLM", ordering="llm")
    def llm_display(self, agent: Agent) -> str:
        return agent.llm or "(default)"

    @admin.display(description="State")
    def run_state(self, agent: Agent) -> str:
        """Said in words: the admin's boolean icon for "stopped" read as an error on a running agent."""
        if agent.stopped:
            return "Stopped (by a shutdown task or an auth error): restart it to run again"
        return "Running" if not agent.disabled else "Disabled"

    @admin.display(description="Lease")
    def lease_display(self, agent: Agent) -> str:
        lease = getattr(agent, "lease", None)
        if lease is None:
            runs = phone_sharer_that_runs(agent=agent) if agent.pk and agent.is_active else None
            if runs is not None:
                return (
                    f"No gateway holds this agent: its phone is also the phone of enabled agent {runs.name}, "
                    f"which runs on that Telegram account. Disable one of them or give one its own phone."
                )
            return "No gateway holds this agent."
        # Dates are formatted before format_html, which escapes (and so stringifies) its arguments.
        return format_html(
            "{} · held by {} · heartbeat {} · expires {}",
            _lease_state(agent),
            change_link(lease, lease.holder),
            _local(lease.heartbeat_at, "%Y-%m-%d %H:%M:%S"),
            _local(lease.expires_at, "%H:%M:%S"),
        )

    @admin.display(description="Prompts in use")
    def effective_prompts(self, agent: Agent) -> str:
        """Each Role Prompt name with the prompt it resolves to: the agent's own beats the global one."""
        names = [n for n in agent.role_prompt_names if isinstance(n, str)]
        if not names:
            return "-"
        found: dict[str, RolePrompt] = {}
        candidates = RolePrompt.objects.filter(
            name__in=names, scope_key__in=[0, agent.pk or 0]
        ).select_related("agent")
        for prompt in sorted(candidates, key=lambda p: p.scope_key == 0):  # agent-specific first
            found.setdefault(prompt.name, prompt)
        parts = []
        for name in names:
            prompt = found.get(name)
            if prompt is None:
                parts.append(format_html('<strong style="color:#ba2121">{}: missing</strong>', name))
            else:
                parts.append(change_link(prompt, f"{name} ({prompt.scope})"))
        return html_row(parts)

    @admin.display(description="See")
    def related(self, agent: Agent) -> str:
        if agent.pk is None:
            return "-"
        links = [
            changelist_link("conversations.conversation", "conversations", agent__id__exact=agent.pk),
            changelist_link("memory.memory", "memories", agent__id__exact=agent.pk),
            changelist_link("memory.plan", "plans", agent__id__exact=agent.pk),
            changelist_link("conversations.tasknode", "nodes", agent__id__exact=agent.pk),
            changelist_link("llm.llmcall", "LLM calls", agent__id__exact=agent.pk),
            changelist_link("conversations.activityevent", "activity", agent__id__exact=agent.pk),
            format_html(
                '<a href="{}">Telegram account</a>', reverse("admin:agents_agent_telegram", args=[agent.pk])
            ),
            format_html(
                '<a href="{}">Telegram sign-in</a>', reverse("admin:agents_agent_signin", args=[agent.pk])
            ),
        ]
        return html_row(links)

    def change_view(self, request, object_id, form_url="", extra_context=None):
        # Problems the agent runs with anyway (an Agent Timezone that is no zone...), as on the dashboard.
        if request.method == "GET":
            agent = self.get_object(request, object_id)
            for notice in agent_notices(agent=agent) if agent else []:
                self.message_user(request, notice, messages.WARNING)
        return super().change_view(request, object_id, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        curation.agent_save(
            agent=obj,
            timezone_change=form.cleaned_data.get("timezone_change", ""),
            by=request.user.get_username(),
        )

    def save_formset(self, request, form, formset, change):
        instances = formset.save(commit=False)
        for deleted in formset.deleted_objects:
            deleted.delete()
        for instance in instances:
            if isinstance(instance, RolePrompt):
                curation.role_prompt_save(prompt=instance)
            elif isinstance(instance, AgentDocument):
                curation.agent_document_save(document=instance)
            elif save := agent_inline_saver(instance):
                save(instance)
        formset.save_m2m()

    @admin.action(description="Disable the selected agents", permissions=["change"])
    def disable_agents(self, request, queryset):
        for agent in queryset:
            curation.agent_set_disabled(agent=agent, disabled=True)
        self.message_user(request, f"{queryset.count()} agent(s) disabled.", messages.SUCCESS)


class PromptScopeFilter(admin.SimpleListFilter):
    title = "scope"
    parameter_name = "scope"

    def lookups(self, request, model_admin):
        return [("global", "Global"), ("agent", "Agent-specific")]

    def queryset(self, request, queryset):
        if self.value() == "global":
            return queryset.filter(agent__isnull=True)
        if self.value() == "agent":
            return queryset.filter(agent__isnull=False)
        return queryset


@admin.register(RolePrompt)
class RolePromptAdmin(admin.ModelAdmin):
    form = service_form(lambda obj: curation.role_prompt_validate(prompt=obj))
    list_display = ["name", "scope_display", "preview", "origin_dir", "updated"]
    list_filter = [PromptScopeFilter, "agent", "origin_dir"]
    search_fields = ["name", "text"]
    fields = ["name", "agent", "text", "origin_dir", "source_file", "content_hash", "updated"]
    readonly_fields = ["origin_dir", "source_file", "content_hash", "updated"]
    list_select_related = ["agent"]

    @admin.display(description="Scope", ordering="scope_key")
    def scope_display(self, prompt: RolePrompt) -> str:
        return change_link(prompt.agent) if prompt.agent_id else "global"

    @admin.display(description="Text")
    def preview(self, prompt: RolePrompt) -> str:
        return short(prompt.text)

    def save_model(self, request, obj, form, change):
        curation.role_prompt_save(prompt=obj)


@admin.register(AgentDocument)
class AgentDocumentAdmin(admin.ModelAdmin):
    """Documents agents read with `file:NAME` retrieve URLs (`agents/<stem>/docs/*.md`)."""

    form = service_form(lambda obj: curation.agent_document_validate(document=obj))
    list_display = ["name", "agent", "updated"]
    list_filter = ["agent"]
    search_fields = ["name", "agent__name", "content"]
    list_select_related = ["agent"]
    readonly_fields = ["source_file", "content_hash", "updated"]
    fields = ["agent", "name", "content", "source_file", "content_hash", "updated"]

    def save_model(self, request, obj, form, change):
        curation.agent_document_save(document=obj)


@admin.register(AgentLease)
class AgentLeaseAdmin(ReadOnlyAdmin):
    list_display = ["agent", "holder", "alive", "acquired_at", "heartbeat_at", "expires_at"]
    list_filter = ["holder"]
    search_fields = ["agent__name", "holder"]
    list_select_related = ["agent"]

    @admin.display(boolean=True)
    def alive(self, lease: AgentLease) -> bool:
        return lease.expires_at > clock.now()


@admin.register(TelegramSession)
class TelegramSessionAdmin(ReadOnlyAdmin):
    """The auth key is never shown: only where the session connects and when it last changed."""

    list_display = ["agent", "dc_id", "server_address", "port", "updated"]
    fields = ["agent", "dc_id", "server_address", "port", "takeout_id", "updated"]
    search_fields = ["agent__name"]


@admin.register(TelegramUpdateState)
class TelegramUpdateStateAdmin(ReadOnlyAdmin):
    list_display = ["agent", "entity_id", "pts", "qts", "seq", "date"]
    list_filter = ["agent"]


@admin.register(TelegramEntity)
class TelegramEntityAdmin(ReadOnlyAdmin):
    list_display = ["agent", "entity_id", "username", "name", "phone"]
    list_filter = ["agent"]
    search_fields = ["username", "name", "=entity_id"]
    exclude = ["access_hash"]


@admin.register(GatewayRequest)
class GatewayRequestAdmin(ReadOnlyAdmin):
    list_display = ["created", "kind", "agent", "status", "claimed_by", "finished", "error_preview"]
    list_filter = ["kind", "status", "agent"]
    search_fields = ["agent__name", "error", "claimed_by"]
    fields = [
        "agent",
        "kind",
        "status",
        "params_display",
        "result",
        "error",
        "claimed_by",
        "created",
        "finished",
    ]
    readonly_fields = fields
    list_select_related = ["agent"]
    date_hierarchy = "created"

    @admin.display(description="Error")
    def error_preview(self, request_row: GatewayRequest) -> str:
        return short(request_row.error, 60)

    @admin.display(description="Params")
    def params_display(self, request_row: GatewayRequest) -> dict:
        params = dict(request_row.params)
        if request_row.kind == GatewayRequest.Kind.SEND_OTP and "text" in params:
            params["text"] = "(one-time code, hidden)"
        for secret in ("code", "password"):  # a sign-in step waiting for its gateway
            if params.get(secret):
                params[secret] = "(hidden)"
        return params


@admin.register(TelegramDevice)
class TelegramDeviceAdmin(admin.ModelAdmin):
    list_display = [
        "user",
        "name",
        "telegram_user_id",
        "confirmed",
        "last_sent_at",
        "throttling_failure_count",
    ]
    list_filter = ["confirmed"]
    search_fields = ["user__username", "=telegram_user_id"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "last_sent_at",
        "valid_until",
        "throttling_failure_timestamp",
        "throttling_failure_count",
    ]


from agents import admin_access  # noqa: E402,F401  (grants and access requests)
