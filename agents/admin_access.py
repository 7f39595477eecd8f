"""Admin for per-agent access grants and Google sign-in access requests (docs/dashboard.md, "Access")."""

from __future__ import annotations

from django.contrib import admin, messages

from agents.models import AccessRequest, AgentGrant
from agents.services.access_requests import AccessRequestError, access_request_approve, access_request_refuse
from cindy_site import clock
from cindy_site.admin_utils import ReadOnlyAdmin


@admin.register(AgentGrant)
class AgentGrantAdmin(admin.ModelAdmin):
    list_display = ["__str__", "agent", "user", "group", "created"]
    list_filter = ["agent", "group"]
    search_fields = ["user__username", "user__email", "group__name", "agent__name"]
    autocomplete_fields = ["agent"]
    fields = ["user", "group", "agent"]


@admin.register(AccessRequest)
class AccessRequestAdmin(ReadOnlyAdmin):
    list_display = ["email", "name", "provider", "status", "attempts", "requested", "last_attempt", "user"]
    list_filter = ["status", "provider"]
    search_fields = ["email", "name"]
    actions = ["approve", "refuse"]

    def _decide(self, request, queryset, decide, verb: str) -> None:
        done = 0
        for row in queryset:
            try:
                decide(access_request=row, by=request.user, at=clock.now())
                done += 1
            except AccessRequestError as exc:
                self.message_user(request, str(exc), messages.ERROR)
        if done:
            self.message_user(request, f"{verb} {done} request(s).", messages.SUCCESS)

    @admin.action(
        description="Approve: create the staff account (no role, no grants)", permissions=["operate"]
    )
    def approve(self, request, queryset) -> None:
        self._decide(request, queryset, access_request_approve, "Approved")

    @admin.action(description="Refuse", permissions=["operate"])
    def refuse(self, request, queryset) -> None:
        self._decide(request, queryset, access_request_refuse, "Refused")
