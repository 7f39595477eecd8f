"""Admin for the sandbox (the DB-backed stand-in for Telegram). Read-only: the sandbox chat page and
`manage.py sandbox` write through the sandbox services."""

from __future__ import annotations

from django.contrib import admin

from cindy_site.admin_utils import ReadOnlyAdmin, ReadOnlyInline, change_link, short
from sandbox.models import (
    SandboxChat,
    SandboxMember,
    SandboxMessage,
    SandboxTopic,
    SandboxUpdate,
    SandboxUser,
)


class SandboxUserAdmin(ReadOnlyAdmin):
    list_display = ["name", "username", "user_id", "agent_link", "blocked_user_ids"]
    search_fields = ["name", "username", "=user_id"]
    list_select_related = ["agent"]

    @admin.display(description="Agent")
    def agent_link(self, user: SandboxUser) -> str:
        return change_link(user.agent) if user.agent_id else "-"


class SandboxMemberInline(ReadOnlyInline):
    model = SandboxMember
    fields = ["user", "muted", "typing_until", "read_up_to", "cannot_write"]
    readonly_fields = fields
    show_change_link = False


class SandboxMessageInline(ReadOnlyInline):
    model = SandboxMessage
    fields = [
        "message_id",
        "sender",
        "date",
        "text",
        "reply_to_id",
        "media",
        "reactions",
        "edited",
        "deleted",
    ]
    readonly_fields = fields


class SandboxChatAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "kind", "peer_id", "next_message_id", "created"]
    list_filter = ["kind"]
    search_fields = ["title", "=peer_id"]
    inlines = [SandboxMemberInline, SandboxMessageInline]


class SandboxMemberAdmin(ReadOnlyAdmin):
    list_display = ["chat", "user", "muted", "typing_until", "read_up_to"]
    list_filter = ["chat"]
    list_select_related = ["chat", "user"]


class SandboxMessageAdmin(ReadOnlyAdmin):
    list_display = ["message_id", "chat", "sender", "date", "preview", "random_id", "edited", "deleted"]
    list_filter = ["chat", "edited", "deleted"]
    search_fields = ["text", "sender__name"]
    list_select_related = ["chat", "sender"]

    @admin.display(description="Text")
    def preview(self, message: SandboxMessage) -> str:
        return short(message.text)


class SandboxUpdateAdmin(ReadOnlyAdmin):
    list_display = ["id", "chat", "kind", "message_id", "actor", "created"]
    list_filter = ["kind", "chat"]
    list_select_related = ["chat", "actor"]


class SandboxTopicAdmin(ReadOnlyAdmin):
    list_display = ["title", "chat", "topic_id", "created"]
    list_filter = ["chat"]
    search_fields = ["title"]
    list_select_related = ["chat"]


admin.site.register(SandboxUser, SandboxUserAdmin)
admin.site.register(SandboxChat, SandboxChatAdmin)
admin.site.register(SandboxMember, SandboxMemberAdmin)
admin.site.register(SandboxMessage, SandboxMessageAdmin)
admin.site.register(SandboxUpdate, SandboxUpdateAdmin)
admin.site.register(SandboxTopic, SandboxTopicAdmin)
