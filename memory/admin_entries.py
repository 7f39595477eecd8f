"""Admin for summaries, notes and intentions: listed, added, edited and deleted per agent and channel.

People's edits go through `memory.services.curation.entry_save`; the agent's own go through the
stored kinds (`summarize`, `note`, `intend`). Channels are Telegram peer ids, filtered with
`?agent__id__exact=<agent>&channel_id=<peer id>` (the conversation admin links there).
"""

from __future__ import annotations

from django.contrib import admin

from cindy_site.admin_utils import change_link, service_form, short
from memory.models import Intention, Note, Summary
from memory.services.curation import entry_save, entry_validate


class ChannelFilter(admin.SimpleListFilter):
    """Channels (peer ids) that have rows, narrowed to the chosen agent when there is one."""

    title = "channel"
    parameter_name = "channel_id"

    def lookups(self, request, model_admin):
        queryset = model_admin.model.objects.filter(channel_id__isnull=False)
        agent_id = request.GET.get("agent__id__exact")
        if agent_id and agent_id.isdigit():
            queryset = queryset.filter(agent_id=int(agent_id))
        ids = queryset.order_by("channel_id").values_list("channel_id", flat=True).distinct()[:200]
        return [(str(channel), str(channel)) for channel in ids]

    def queryset(self, request, queryset):
        value = self.value()
        if value and value.lstrip("-").isdigit():
            return queryset.filter(channel_id=int(value))
        return queryset


class EntryAdmin(admin.ModelAdmin):
    """Shared by the three: the validated form, an agent link, and saving through the service."""

    form = service_form(lambda obj: entry_validate(entry=obj))
    list_filter = ["agent", ChannelFilter]
    search_fields = ["content", "entry_id", "=channel_id"]
    list_select_related = ["agent"]
    readonly_fields = ["created"]

    @admin.display(description="Content")
    def preview(self, entry) -> str:
        return short(entry.content)

    @admin.display(description="Agent", ordering="agent__name")
    def agent_link(self, entry) -> str:
        return change_link(entry.agent)

    def save_model(self, request, obj, form, change):
        entry_save(entry=obj)


@admin.register(Summary)
class SummaryAdmin(EntryAdmin):
    list_display = ["preview", "agent_link", "channel_id", "first_message_id", "last_message_id", "created"]
    fields = [
        "agent",
        "channel_id",
        "entry_id",
        "content",
        ("first_message_id", "last_message_id"),
        ("first_message_date", "last_message_date"),
        "created",
        "extra",
    ]
    ordering = ["agent", "channel_id", "first_message_id", "id"]


@admin.register(Note)
class NoteAdmin(EntryAdmin):
    list_display = ["preview", "agent_link", "channel_id", "entry_id", "created"]
    fields = ["agent", "channel_id", "entry_id", "content", "created", "extra"]


@admin.register(Intention)
class IntentionAdmin(EntryAdmin):
    """Standing goals (`intend`) and cross-chat intents (`xsend`); a new row is a standing goal."""

    list_display = ["preview", "agent_link", "kind", "channel_id", "entry_id", "created", "consumed"]
    list_filter = ["agent", "kind", ChannelFilter, ("consumed", admin.EmptyFieldListFilter)]
    fields = ["agent", "kind", "channel_id", "entry_id", "content", "created", "consumed", "extra"]
