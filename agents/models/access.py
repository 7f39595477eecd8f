"""Who may work on which agent (`AgentGrant`), and who asked to be let in (`AccessRequest`).

A grant gives one staff user, or every member of one group, access to one agent, or to every agent
when `agent` is empty. What they may do there is still decided by their model permissions (their
role): a grant only widens *where* those permissions apply. `agents.access` reads grants.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q

from agents.models.agent import Agent


class AgentGrant(models.Model):
    agent = models.ForeignKey(
        Agent,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="grants",
        help_text="Empty: every agent, present and future.",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="agent_grants"
    )
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="agent_grants"
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "agent access grant"
        constraints = [
            models.CheckConstraint(
                name="agentgrant_user_xor_group",
                condition=(
                    Q(user__isnull=False, group__isnull=True) | Q(user__isnull=True, group__isnull=False)
                ),
                violation_error_message="A grant names either a staff user or a group, not both or neither.",
            ),
            models.UniqueConstraint(fields=["agent", "user"], name="agentgrant_unique_user"),
            models.UniqueConstraint(fields=["agent", "group"], name="agentgrant_unique_group"),
        ]

    def __str__(self) -> str:
        who = self.user or (f"group {self.group}" if self.group_id else "?")
        return f"{who} → {self.agent or 'every agent'}"


class AccessRequest(models.Model):
    """A first sign-in through an identity provider by an address no staff account has. Nothing is
    created until an owner approves it (`agents.services.access_requests`)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REFUSED = "refused", "Refused"

    provider = models.CharField(max_length=64, help_text="The sign-in provider's id, e.g. google.")
    subject = models.CharField(max_length=255, help_text="The provider's stable id for the person (`sub`).")
    email = models.EmailField(max_length=254)
    name = models.CharField(max_length=150, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    requested = models.DateTimeField(help_text="The first sign-in attempt.")
    last_attempt = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=1)
    decided = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="access_requests",
        help_text="The staff account made on approval.",
    )

    class Meta:
        verbose_name = "sign-in access request"
        constraints = [
            models.UniqueConstraint(fields=["provider", "subject"], name="accessrequest_unique_subject"),
        ]

    def __str__(self) -> str:
        return f"{self.email} ({self.get_status_display()})"
