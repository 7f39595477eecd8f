"""Starting a disabled or stopped agent again from the admin: the change page's Restart button and
the list's "Enable or restart" action. Both go through `curation.agent_restart`."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import path

from agents.selectors import agents_by_phone
from agents.services import curation


class AgentRestartMixin:
    """For the Agent admin; its change form template shows the button for a stopped or disabled agent."""

    @admin.action(description="Enable or restart the selected agents (clears a stop)", permissions=["change"])
    def enable_agents(self, request, queryset):
        count = 0
        for agent in queryset:
            if agent.disabled or agent.stopped:
                curation.agent_restart(agent=agent, by=request.user.get_username())
                count += 1
        self.message_user(
            request,
            f"{count} agent(s) enabled or restarted; a running gateway picks them up within seconds.",
            messages.SUCCESS,
        )
        chosen = {agent.pk for agent in queryset}
        for sharers in agents_by_phone(running_on_telegram=True).values():
            if chosen & {a.pk for a in sharers}:
                self.message_user(
                    request,
                    f"{', '.join(a.name for a in sharers)} share the phone {sharers[0].phone}: one Telegram "
                    "account runs one persona, so the gateway starts only one of them (the one already "
                    "running, else the oldest); disable the others or give each its own phone.",
                    messages.WARNING,
                )

    def get_urls(self):
        restart = self.admin_site.admin_view(self.restart_view)
        return [path("<int:pk>/restart/", restart, name="agents_agent_restart"), *super().get_urls()]

    def restart_view(self, request, pk: int):
        """The change page's Restart button: POST only."""
        if request.method != "POST" or not self.has_change_permission(request):
            raise PermissionDenied
        # Only an agent the user may see (agents.access): another agent is "not found".
        agent = get_object_or_404(self.get_queryset(request), pk=pk)
        if not self.has_change_permission(request, agent):
            raise PermissionDenied
        curation.agent_restart(agent=agent, by=request.user.get_username())
        self.message_user(
            request,
            f"{agent.name} restarted; a running gateway picks it up within seconds.",
            messages.SUCCESS,
        )
        return redirect("admin:agents_agent_change", agent.pk)
