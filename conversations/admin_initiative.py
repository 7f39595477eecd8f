"""Admin for the agent's initiative: scheduled events, the daily schedule (as a day timeline), the media
library (with previews and uploads), and the console's XSend, which nudges an agent in a conversation."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from agents.access import visible_to
from agents.models import Agent
from agents.schedule import _zone
from cindy_site.admin_utils import change_link
from cindy_site.clock import now
from conversations.admin_schedule_print import schedule_print_view
from conversations.models import Conversation
from conversations.services.initiative import conversation_nudge
from media_catalog.models import LibraryItem
from media_catalog.services.library import library_item_save, library_item_upload
from memory.models import ScheduledEvent, ScheduleEntry, ScheduleRefresh
from memory.schedule_times import TimeError, parse_event_time, parse_interval
from memory.services.schedule import clash_label, schedule_clash

# --- events -------------------------------------------------------------------------------------


class ScheduledEventForm(forms.ModelForm):
    class Meta:
        model = ScheduledEvent
        fields = [
            "agent",
            "channel_id",
            "entry_id",
            "intent",
            "time_raw",
            "timezone",
            "interval_raw",
            "occurrences",
        ]
        labels = {"time_raw": "Time", "interval_raw": "Interval"}

    def clean(self):
        data = super().clean()
        agent = data.get("agent")
        try:
            if data.get("interval_raw"):
                parse_interval(data["interval_raw"])
            if agent is not None and data.get("time_raw"):
                due = parse_event_time(
                    data["time_raw"], timezone=data.get("timezone") or "", agent_timezone=agent.timezone
                )
                if "time_raw" in self.changed_data and due <= now():
                    raise ValidationError(
                        {"time_raw": f"{data['time_raw']} is in the past: give a future time"}
                    )
        except TimeError as exc:
            raise ValidationError(str(exc)) from None
        return data


@admin.register(ScheduledEvent)
class ScheduledEventAdmin(admin.ModelAdmin):
    form = ScheduledEventForm
    list_display = [
        "entry_id",
        "agent_link",
        "conversation",
        "intent",
        "due_at",
        "interval_raw",
        "fired_count",
    ]
    list_filter = ["agent", "channel_id"]
    search_fields = ["intent", "entry_id", "=channel_id"]
    list_select_related = ["agent"]
    ordering = ["due_at"]
    readonly_fields = ["due_at", "fired_count", "last_fired", "created"]

    @admin.display(description="Agent", ordering="agent__name")
    def agent_link(self, event: ScheduledEvent) -> str:
        return change_link(event.agent)

    @admin.display(description="Conversation", ordering="channel_id")
    def conversation(self, event: ScheduledEvent) -> str:
        found = Conversation.objects.filter(
            agent_id=event.agent_id, peer_id=event.channel_id, topic_id=event.topic_id
        ).first()
        return change_link(found) if found else str(event.channel_id)

    def save_model(self, request, obj, form, change):
        if obj.created is None:
            obj.created = now()
        obj.save()


# --- the daily schedule -------------------------------------------------------------------------


class ScheduleEntryForm(forms.ModelForm):
    """The schedule as operators edit it keeps the rules the `schedule` task keeps: an entry ends after
    it starts and overlaps no other entry of the same agent (one may start when the previous ends)."""

    class Meta:
        model = ScheduleEntry
        fields = ["agent", "entry_id", "activity", "description", "start", "end", "responsiveness", "created"]

    def clean(self) -> dict:
        data = super().clean()
        agent, start, end = data.get("agent"), data.get("start"), data.get("end")
        if agent is None or start is None or end is None:
            return data
        if end <= start:
            raise ValidationError(
                {"end": f"The entry ends ({end:%Y-%m-%d %H:%M}) before it starts: give a later end."}
            )
        clash = schedule_clash(agent_id=agent.pk, start=start, end=end, pk=self.instance.pk)
        if clash is not None:
            raise ValidationError(
                f"This entry overlaps {clash_label(clash)}: move it, or change or delete that entry first."
            )
        return data


@admin.register(ScheduleEntry)
class ScheduleEntryAdmin(admin.ModelAdmin):
    form = ScheduleEntryForm
    list_display = ["activity", "agent", "when", "responsiveness", "timeline", "entry_id"]
    list_select_related = ["agent"]
    list_filter = ["agent"]
    search_fields = ["activity", "description", "entry_id"]
    date_hierarchy = "start"
    ordering = ["agent", "start"]

    def get_urls(self):
        timeline = path(
            "timeline/<int:agent_id>/",
            self.admin_site.admin_view(self.timeline_view),
            name="memory_scheduleentry_timeline",
        )
        printable = path(
            "print/<int:agent_id>/",
            self.admin_site.admin_view(self.print_view),
            name="memory_scheduleentry_print",
        )
        return [timeline, printable, *super().get_urls()]

    def print_view(self, request: HttpRequest, agent_id: int) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        return schedule_print_view(request, agent_id)

    @admin.display(description="When (agent's time)", ordering="start")
    def when(self, entry: ScheduleEntry) -> str:
        """Start and end in one short column, in the agent's timezone (two long dates pushed the
        timeline link past the list's edge)."""
        zone = _zone(entry.agent.timezone)
        start, end = entry.start.astimezone(zone), entry.end.astimezone(zone)
        until = end.strftime("%H:%M") if end.date() == start.date() else end.strftime("%Y-%m-%d %H:%M")
        return f"{start:%Y-%m-%d %H:%M}–{until}"

    @admin.display(description="Timeline")
    def timeline(self, entry: ScheduleEntry) -> str:
        day = entry.start.astimezone(_zone(entry.agent.timezone)).date().isoformat()
        url = reverse("admin:memory_scheduleentry_timeline", args=[entry.agent_id])
        return format_html('<a href="{}?day={}">day view</a>', url, day)

    def timeline_view(self, request: HttpRequest, agent_id: int) -> HttpResponse:
        """One day of the agent's schedule as blocks on a 24-hour line, in the agent's timezone."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        agent = get_object_or_404(visible_to(request.user, Agent.objects.all()), pk=agent_id)
        zone = _zone(agent.timezone)
        try:
            day = dt.date.fromisoformat(request.GET.get("day", ""))
        except ValueError:
            day = now().astimezone(zone).date()
        start = dt.datetime.combine(day, dt.time(0), tzinfo=zone)
        end = start + dt.timedelta(days=1)
        blocks = []
        for entry in ScheduleEntry.objects.filter(agent=agent, start__lt=end, end__gt=start).order_by(
            "start"
        ):
            begin, finish = max(entry.start, start), min(entry.end, end)
            blocks.append(
                {
                    "entry": entry,
                    "left": round((begin - start) / (end - start) * 100, 3),
                    "width": round((finish - begin) / (end - start) * 100, 3),
                    "from": begin.astimezone(zone).strftime("%H:%M"),
                    "to": finish.astimezone(zone).strftime("%H:%M"),
                    "asleep": entry.responsiveness == 0,
                }
            )
        moment = now()
        context = {
            **self.admin_site.each_context(request),
            "title": f"{agent.name}'s schedule on {day:%A %d %B %Y}",
            "agent": agent,
            "day": day,
            "previous": (day - dt.timedelta(days=1)).isoformat(),
            "next": (day + dt.timedelta(days=1)).isoformat(),
            "blocks": blocks,
            "hours": range(0, 24, 3),
            "now_left": round((moment - start) / (end - start) * 100, 3) if start <= moment < end else None,
            "opts": self.model._meta,
            "zone": str(zone) if isinstance(zone, ZoneInfo) else "UTC",
        }
        return TemplateResponse(request, "admin/initiative/schedule_timeline.html", context)


@admin.register(ScheduleRefresh)
class ScheduleRefreshAdmin(admin.ModelAdmin):
    """When each agent's daily schedule planning turn is next due; move `due_at` to run it sooner."""

    list_display = ["agent", "due_at", "last_run"]
    list_select_related = ["agent"]
    readonly_fields = ["last_run"]


# --- the media library --------------------------------------------------------------------------


class LibraryUploadForm(forms.ModelForm):
    upload = forms.FileField(required=False, help_text="Sandbox agents: the picture or file to add")

    class Meta:
        model = LibraryItem
        fields = ["agent", "description"]


@admin.register(LibraryItem)
class LibraryItemAdmin(admin.ModelAdmin):
    form = LibraryUploadForm
    list_display = ["preview", "unique_id", "agent", "kind", "description"]
    list_filter = ["agent", "kind"]
    search_fields = ["unique_id", "description"]
    readonly_fields = ["preview", "unique_id", "kind", "mime", "saved_message_id"]

    def get_urls(self):
        file_view = path(
            "<int:item_id>/file/",
            self.admin_site.admin_view(self.file_view),
            name="media_catalog_libraryitem_file",
        )
        return [file_view, *super().get_urls()]

    @admin.display(description="Preview")
    def preview(self, item: LibraryItem) -> str:
        if not item.pk or not item.file or not (item.mime or "").startswith("image/"):
            return item.kind if item.pk else "-"
        url = reverse("admin:media_catalog_libraryitem_file", args=[item.pk])
        return format_html(
            '<img src="{}" alt="{}" style="max-height:80px;max-width:120px">', url, item.unique_id
        )

    def file_view(self, request: HttpRequest, item_id: int) -> FileResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        item = get_object_or_404(self.get_queryset(request), pk=item_id)
        if not item.file or not (item.mime or "").startswith("image/"):
            raise Http404("no image file for this library item")
        response = FileResponse(item.file.open("rb"), content_type=item.mime)
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response

    def save_model(self, request, obj, form, change):
        upload = form.cleaned_data.get("upload")
        if upload:
            saved = library_item_upload(agent_id=obj.agent_id, upload=upload, description=obj.description)
            obj.pk, obj.unique_id = saved.pk, saved.unique_id
            return
        if not change:
            raise ValidationError("choose a file to upload (Telegram libraries come from Saved Messages)")
        library_item_save(item=obj)

    def add_view(self, request, form_url="", extra_context=None):
        try:
            return super().add_view(request, form_url, extra_context)
        except ValidationError as exc:
            messages.error(request, exc.messages[0])
            return HttpResponseRedirect(request.path)


# --- XSend: an operator nudges an agent in a conversation ----------------------------------------


class XSendForm(forms.Form):
    intent = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="What the agent should do in this conversation; leave empty to let it continue on its own.",
    )


def xsend_view(model_admin: admin.ModelAdmin, request: HttpRequest, conversation_id: int) -> HttpResponse:
    if not model_admin.has_change_permission(request):
        raise PermissionDenied
    conversation = get_object_or_404(
        visible_to(request.user, Conversation.objects.select_related("agent")), pk=conversation_id
    )
    form = XSendForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        conversation_nudge(
            conversation=conversation,
            intent=form.cleaned_data["intent"],
            operator=request.user.get_username(),
        )
        messages.success(request, f"{conversation.agent.name} will act in {conversation} on the next tick.")
        return HttpResponseRedirect(
            reverse("admin:conversations_conversation_change", args=[conversation.pk])
        )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": f"XSend: nudge {conversation.agent.name} in {conversation}",
        "conversation": conversation,
        "form": form,
        "opts": Conversation._meta,
    }
    return TemplateResponse(request, "admin/initiative/xsend.html", context)


@admin.action(description="XSend: nudge the agent in the selected conversations", permissions=["change"])
def nudge_conversations(model_admin, request, queryset) -> None:
    for conversation in queryset.select_related("agent"):
        conversation_nudge(conversation=conversation, operator=request.user.get_username())
    model_admin.message_user(request, f"Nudged {queryset.count()} conversation(s).", messages.SUCCESS)
