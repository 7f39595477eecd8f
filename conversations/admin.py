"""Admin for the conversation mirror, task graphs and the activity stream (LLM calls and prices: llm/admin.py).

Messages, graphs, nodes and activity record what happened: they are read-only. People change only
conversation settings (muted, LLM override).
"""

from __future__ import annotations

from django.contrib import admin
from django.db.models import OuterRef, Subquery
from django.urls import path, reverse
from django.utils.html import format_html

from cindy_site.admin_utils import (
    ReadOnlyAdmin,
    ReadOnlyInline,
    change_link,
    changelist_link,
    html_row,
    service_form,
    short,
)
from conversations.admin_initiative import nudge_conversations, xsend_view
from conversations.admin_telegram import (
    conversations_request_leave,
    gateway_note,
    telegram_requests_display,
)
from conversations.admin_voice import register_voice_admin
from conversations.admin_work import register_work_queue_actions
from conversations.models import (
    ActivityEvent,
    BackfillMark,
    Conversation,
    GatewayWake,
    Message,
    TaskGraph,
    TaskNode,
)
from conversations.services.curation import (
    conversation_settings_save,
    conversation_validate,
    conversations_set_muted,
)
from conversations.services.summaries import conversations_summarize_now

INLINE_ROWS = 50  # conversations can hold thousands of messages: inlines show the newest ones


class RecentInline(ReadOnlyInline):
    """Shows the newest INLINE_ROWS rows of the parent conversation (ordered oldest first)."""

    order_field = "id"

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        conversation_id = getattr(request, "_cindy_conversation_id", None)
        if conversation_id is None:
            return queryset
        recent = queryset.filter(conversation_id=conversation_id).order_by(f"-{self.order_field}")
        cutoff = recent.values_list(self.order_field, flat=True)[INLINE_ROWS - 1 : INLINE_ROWS].first()
        return queryset.filter(**{f"{self.order_field}__gte": cutoff}) if cutoff is not None else queryset


class MessageInline(RecentInline):
    model = Message
    order_field = "message_id"
    fields = ["message_id", "date", "sender_name", "is_agent", "text", "reply_to_id", "edited", "deleted"]
    readonly_fields = fields
    verbose_name_plural = f"messages (newest {INLINE_ROWS})"


class TaskNodeInline(RecentInline):
    model = TaskNode
    fk_name = "conversation"
    fields = [
        "graph",
        "sequence",
        "kind",
        "params",
        "status",
        "attempts",
        "not_before",
        "lease_owner",
        "error",
    ]
    readonly_fields = fields
    verbose_name_plural = f"task nodes (newest {INLINE_ROWS})"


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    form = service_form(lambda obj: conversation_validate(conversation=obj))
    list_display = [
        "__str__",
        "agent_link",
        "kind",
        "peer_id",
        "username",
        "flags",
        "llm_model",
        "last_message_at",
        "graph",
    ]
    list_filter = ["agent", "kind", "muted", "gagged", "blocked"]
    search_fields = ["title", "topic_title", "username", "=peer_id", "agent__name"]
    list_select_related = ["agent"]
    date_hierarchy = "last_message_at"
    fields = [
        "agent",
        "peer_id",
        "topic_id",
        "topic_title",
        "kind",
        "title",
        "username",
        "muted",
        "gagged",
        "answer_bots",
        "llm_model",
        "blocked",
        "cannot_write",
        "partner_in_contacts",
        "last_read_message_id",
        "last_message_at",
        "details",
        "related",
        "telegram_requests",
        "created",
        "updated",
    ]
    readonly_fields = [
        "agent",
        "peer_id",
        "topic_id",
        "topic_title",
        "kind",
        "title",
        "username",
        "blocked",
        "cannot_write",
        "partner_in_contacts",
        "last_read_message_id",
        "last_message_at",
        "details",
        "related",
        "telegram_requests",
        "created",
        "updated",
    ]
    inlines = [TaskNodeInline, MessageInline]
    actions = [
        "mute_in_telegram",
        "unmute_in_telegram",
        "leave_in_telegram",
        "summarize_now",
        nudge_conversations,
    ]

    def get_urls(self):
        xsend = path(
            "<int:conversation_id>/xsend/",
            self.admin_site.admin_view(
                lambda request, conversation_id: xsend_view(self, request, conversation_id)
            ),
            name="conversations_conversation_xsend",
        )
        return [xsend, *super().get_urls()]

    def has_add_permission(self, request) -> bool:
        return False  # conversations come from Telegram (or the sandbox), never from a form

    def get_queryset(self, request):
        # One subquery instead of a query per row for the "Active graph" column.
        active = TaskGraph.objects.filter(conversation=OuterRef("pk"), status=TaskGraph.Status.ACTIVE)
        return super().get_queryset(request).annotate(active_graph_id=Subquery(active.values("pk")[:1]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        request._cindy_conversation_id = int(object_id) if str(object_id).isdigit() else None
        return super().change_view(request, object_id, form_url, extra_context)

    @admin.display(description="Agent", ordering="agent__name")
    def agent_link(self, conversation: Conversation) -> str:
        return change_link(conversation.agent)

    @admin.display(description="Flags")
    def flags(self, conversation: Conversation) -> str:
        """Muted, gagged and blocked in one column (the list filters by each): three icon columns
        pushed the later columns past the list's edge at 1280 px."""
        return " · ".join(f for f in ("muted", "gagged", "blocked") if getattr(conversation, f)) or "-"

    @admin.display(description="Active graph")
    def graph(self, conversation: Conversation) -> str:
        graph_id = getattr(conversation, "active_graph_id", None)
        if graph_id is None:
            return "-"
        url = reverse("admin:conversations_taskgraph_change", args=[graph_id])
        return format_html('<a href="{}">graph {}</a>', url, graph_id)

    @admin.display(description="See")
    def related(self, conversation: Conversation) -> str:
        return html_row(
            [
                changelist_link(
                    "conversations.message", "all messages", conversation__id__exact=conversation.pk
                ),
                changelist_link("conversations.taskgraph", "graphs", conversation__id__exact=conversation.pk),
                changelist_link(
                    "conversations.activityevent", "activity", conversation__id__exact=conversation.pk
                ),
                *memory_links(conversation),
                changelist_link(
                    "memory.scheduledevent",
                    "events",
                    agent__id__exact=conversation.agent_id,
                    channel_id=conversation.peer_id,
                    topic_id=conversation.topic_id,
                ),
                format_html(
                    '<a href="{}">XSend</a>',
                    reverse("admin:conversations_conversation_xsend", args=[conversation.pk]),
                ),
            ]
        )

    def save_model(self, request, obj, form, change):
        conversation_settings_save(conversation=obj, changed=list(form.changed_data))
        if "muted" in form.changed_data:
            self.message_user(request, gateway_note(obj.agent, "muted" if obj.muted else "unmuted"))

    @admin.display(description="Telegram requests")
    def telegram_requests(self, conversation: Conversation) -> str:
        return telegram_requests_display(conversation)

    @admin.action(description="Mute the selected chats (in Telegram too)", permissions=["change"])
    def mute_in_telegram(self, request, queryset):
        self._set_muted(request, queryset, muted=True)

    @admin.action(description="Unmute the selected chats (in Telegram too)", permissions=["change"])
    def unmute_in_telegram(self, request, queryset):
        self._set_muted(request, queryset, muted=False)

    def _set_muted(self, request, queryset, *, muted: bool) -> None:
        conversations = list(queryset.select_related("agent"))
        count = conversations_set_muted(conversations=conversations, muted=muted)
        word = "muted" if muted else "unmuted"
        self.message_user(request, f"{count} chat(s) {word} here; the gateway applies it in Telegram.")

    @admin.action(description="Leave the selected groups and channels", permissions=["change"])
    def leave_in_telegram(self, request, queryset):
        self.message_user(
            request, conversations_request_leave(conversations=list(queryset.select_related("agent")))
        )

    @admin.action(description="Summarize now", permissions=["change"])
    def summarize_now(self, request, queryset):
        self.message_user(
            request, conversations_summarize_now(conversations=list(queryset.select_related("agent")))
        )


def memory_links(conversation: Conversation) -> list[str]:
    """Links to the conversation's summaries and notes in the memory admin."""
    filters = {
        "agent__id__exact": conversation.agent_id,
        "channel_id": conversation.peer_id,
        "topic_id": conversation.topic_id,
    }
    return [
        changelist_link("memory.summary", "summaries", **filters),
        changelist_link("memory.note", "notes", **filters),
    ]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = [
        "message_id",
        "conversation_link",
        "sender_name",
        "is_agent",
        "date",
        "preview",
        "edited",
        "deleted",
    ]
    list_filter = ["is_agent", "edited", "deleted", "mentions_agent", "conversation__agent"]
    search_fields = ["text", "sender_name", "sender_username", "=message_id"]
    list_select_related = ["conversation__agent"]
    date_hierarchy = "date"

    @admin.display(description="Conversation", ordering="conversation")
    def conversation_link(self, message: Message) -> str:
        return change_link(message.conversation)

    @admin.display(description="Text")
    def preview(self, message: Message) -> str:
        return short(message.text)


class GraphNodeInline(ReadOnlyInline):
    model = TaskNode
    fk_name = "graph"
    fields = [
        "sequence",
        "kind",
        "params",
        "status",
        "attempts",
        "not_before",
        "lease_owner",
        "lease_expires_at",
        "random_id",
        "result",
        "error",
    ]
    readonly_fields = fields


@admin.register(TaskGraph)
class TaskGraphAdmin(ReadOnlyAdmin):
    list_display = [
        "__str__",
        "conversation_link",
        "status",
        "trigger",
        "target_message_id",
        "node_count",
        "created",
        "finished",
    ]
    list_filter = ["status", "trigger", "conversation__agent"]
    search_fields = ["=id", "conversation__title", "conversation__agent__name"]
    list_select_related = ["conversation__agent"]
    date_hierarchy = "created"
    inlines = [GraphNodeInline]

    @admin.display(description="Conversation")
    def conversation_link(self, graph: TaskGraph) -> str:
        return change_link(graph.conversation)

    @admin.display(description="Nodes")
    def node_count(self, graph: TaskGraph) -> str:
        return changelist_link("conversations.tasknode", "nodes", graph__id__exact=graph.pk)


@admin.register(TaskNode)
class TaskNodeAdmin(ReadOnlyAdmin):
    list_display = [
        "__str__",
        "kind",
        "status",
        "attempts",
        "not_before",
        "lease_owner",
        "lease_expires_at",
        "graph_link",
        "conversation_link",
        "agent_link",
    ]
    list_filter = ["status", "kind", "agent"]
    search_fields = ["=id", "=graph__id", "lease_owner", "error"]
    list_select_related = ["graph", "conversation__agent", "agent"]
    readonly_fields = ["graph_link", "conversation_link", "agent_link", "dependencies"]
    exclude = ["depends_on"]

    @admin.display(description="Graph")
    def graph_link(self, node: TaskNode) -> str:
        return change_link(node.graph, f"graph {node.graph_id}")

    @admin.display(description="Conversation")
    def conversation_link(self, node: TaskNode) -> str:
        return change_link(node.conversation)

    @admin.display(description="Agent")
    def agent_link(self, node: TaskNode) -> str:
        return change_link(node.agent)

    @admin.display(description="Depends on")
    def dependencies(self, node: TaskNode) -> str:
        return ", ".join(f"{dep.kind} #{dep.pk}" for dep in node.depends_on.all()) or "-"


@admin.register(ActivityEvent)
class ActivityEventAdmin(ReadOnlyAdmin):
    list_display = ["created", "kind", "agent", "conversation_link", "node", "summary_preview"]
    list_filter = ["kind", "agent"]
    search_fields = ["summary", "=node_id"]
    list_select_related = ["agent", "conversation__agent"]
    date_hierarchy = "created"
    list_per_page = 100

    @admin.display(description="Conversation")
    def conversation_link(self, event: ActivityEvent) -> str:
        return change_link(event.conversation) if event.conversation_id else "-"

    @admin.display(description="Node")
    def node(self, event: ActivityEvent) -> str:
        if event.node_id is None:
            return "-"
        return changelist_link("conversations.tasknode", f"#{event.node_id}", id__exact=event.node_id)

    @admin.display(description="Summary")
    def summary_preview(self, event: ActivityEvent) -> str:
        return short(event.summary, 120)


@admin.register(GatewayWake)
class GatewayWakeAdmin(ReadOnlyAdmin):
    """The wake-up counter idle gateways watch without Redis (docs/engine.md, "Waking the gateway"):
    if it never moves while messages arrive, the writers' wake-ups are not reaching the database."""

    list_display = ["__str__", "counter"]


@admin.register(BackfillMark)
class BackfillMarkAdmin(ReadOnlyAdmin):
    """How far back `manage.py backfill` has fetched each Telegram chat (docs/telegram.md, "Backfill"):
    the next run goes on from the oldest message stored."""

    list_display = ["agent", "peer_id", "oldest_message_id", "oldest_date", "complete", "fetched", "updated"]
    list_filter = ["complete", "agent"]


register_voice_admin()
register_work_queue_actions()
