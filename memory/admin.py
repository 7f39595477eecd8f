"""Admin for what agents remember: curated memories per partner, episodic memories, plans (and, in
`memory.admin_entries`, summaries, notes and intentions)."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db import models

from agents.admin_parts import agent_inline_add
from cindy_site.admin_utils import LabelledTabularInline, ReadOnlyAdmin, change_link, service_form, short
from memory.models import CuratedMemoryFile, Memory, Plan
from memory.services.curation import memory_save, memory_validate, plan_save, plan_validate


class PartnerFilter(admin.SimpleListFilter):
    """Partners that have memories, narrowed to the chosen agent when there is one."""

    title = "partner"
    parameter_name = "partner_id"

    def lookups(self, request, model_admin):
        queryset = Memory.objects.filter(partner_id__isnull=False)
        agent_id = request.GET.get("agent__id__exact")
        if agent_id and agent_id.isdigit():
            queryset = queryset.filter(agent_id=int(agent_id))
        ids = queryset.order_by("partner_id").values_list("partner_id", flat=True).distinct()[:200]
        return [(str(pid), str(pid)) for pid in ids]

    def queryset(self, request, queryset):
        value = self.value()
        if value and value.lstrip("-").isdigit():
            return queryset.filter(partner_id=int(value))
        return queryset


@admin.register(Memory)
class MemoryAdmin(admin.ModelAdmin):
    form = service_form(lambda obj: memory_validate(memory=obj))
    list_display = ["preview", "agent_link", "kind", "partner_id", "created", "creation_channel"]
    list_filter = ["agent", "kind", PartnerFilter]
    search_fields = ["content", "creation_channel", "=partner_id"]
    list_select_related = ["agent"]
    date_hierarchy = "created"
    fields = [
        "agent",
        "kind",
        "partner_id",
        "content",
        "created",
        "created_raw",
        "creation_channel",
        "creation_channel_id",
        "extra",
        "position",
        "source_file",
        "updated",
    ]
    readonly_fields = ["created_raw", "source_file", "updated"]

    @admin.display(description="Memory")
    def preview(self, memory: Memory) -> str:
        return short(memory.content)

    @admin.display(description="Agent", ordering="agent__name")
    def agent_link(self, memory: Memory) -> str:
        return change_link(memory.agent)

    def save_model(self, request, obj, form, change):
        memory_save(memory=obj)


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    form = service_form(lambda obj: plan_validate(plan=obj))
    list_display = ["preview", "agent_link", "channel_id", "plan_id", "created"]
    list_filter = ["agent"]
    search_fields = ["content", "=channel_id", "plan_id"]
    list_select_related = ["agent"]
    fields = ["agent", "channel_id", "plan_id", "content", "created", "extra"]
    readonly_fields = ["created"]

    @admin.display(description="Plan")
    def preview(self, plan: Plan) -> str:
        return short(plan.content)

    @admin.display(description="Agent", ordering="agent__name")
    def agent_link(self, plan: Plan) -> str:
        return change_link(plan.agent)

    def save_model(self, request, obj, form, change):
        plan_save(plan=obj)


@admin.register(CuratedMemoryFile)
class CuratedMemoryFileAdmin(ReadOnlyAdmin):
    """Which memory files were imported, and their shape; the memories themselves are edited as Memory rows."""

    list_display = ["agent", "partner_id", "shape", "source_file"]
    list_filter = ["agent"]
    search_fields = ["agent__name", "=partner_id", "source_file"]
    list_select_related = ["agent"]

    @admin.display(description="shape")
    def shape(self, record: CuratedMemoryFile) -> str:
        return "object {memory: [...]}" if isinstance(record.envelope, dict) else "list [...]"


class MemoryInline(LabelledTabularInline):
    """The agent's memories on the agent page (added there through agents/admin_parts.py)."""

    model = Memory
    extra = 0
    formfield_overrides = {models.TextField: {"widget": forms.Textarea(attrs={"rows": 3})}}
    fields = ["kind", "partner_id", "content", "created", "creation_channel"]
    readonly_fields = ["created"]
    show_change_link = True
    form = service_form(lambda obj: memory_validate(memory=obj))


agent_inline_add(MemoryInline, save=lambda memory: memory_save(memory=memory))

# Summaries, notes and intentions (memory/admin_entries.py).
from memory import admin_entries  # noqa: E402, F401
