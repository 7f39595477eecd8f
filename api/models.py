"""API tokens: what a script sends as `Authorization: Bearer TOKEN` to act as a staff user.

Only a SHA-256 digest of the token is stored; the token itself is shown once, when it is made.
A token is random (32 bytes), so a plain digest cannot be reversed or guessed; `prefix` (its first
characters) lets a person tell their tokens apart in the admin.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True, help_text="What the token is for, e.g. backup script")
    prefix = models.CharField(max_length=16, editable=False, help_text="The token's first characters")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created = models.DateTimeField(editable=False)
    last_used = models.DateTimeField(null=True, blank=True, editable=False)
    expires = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires")
    revoked = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_by = models.CharField(max_length=150, blank=True, editable=False)

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'}, {self.user})"
