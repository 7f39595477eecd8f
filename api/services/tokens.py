"""Making, checking and revoking API tokens (`api.models.ApiToken`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from django.contrib.auth import get_user_model

from api.models import ApiToken
from cindy_site.clock import now

TOKEN_PREFIX = "cindy_"
PREFIX_LENGTH = len(TOKEN_PREFIX) + 6
#: `last_used` is written at most this often per token, so a busy script does not write on every call.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)


class TokenError(ValueError):
    """A token cannot be made or revoked as asked; the message says why and what to do."""


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def api_token_create(
    *, user: Any, name: str = "", expires: dt.datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token for `user`: the stored row and the token itself (shown once, never stored)."""
    if not (user.is_active and user.is_staff):
        raise TokenError(f"{user.get_username()} is not active staff: only staff users get API tokens")
    if expires is not None and expires <= now():
        raise TokenError(f"the expiry {expires.isoformat()} is in the past: give a future date or none")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=(name or "").strip()[:100],
        prefix=raw[:PREFIX_LENGTH],
        digest=token_digest(raw),
        created=now(),
        expires=expires,
    )
    return token, raw


def api_token_create_for(
    *, username: str, name: str = "", expires: dt.datetime | None = None
) -> tuple[ApiToken, str]:
    user = get_user_model().objects.filter(**{get_user_model().USERNAME_FIELD: username}).first()
    if user is None:
        raise TokenError(
            f'no user is named "{username}": check the spelling, or create the user first '
            "(`manage.py createsuperuser`, or the admin's Users page)"
        )
    return api_token_create(user=user, name=name, expires=expires)


def api_token_revoke(*, token: ApiToken, by: str) -> ApiToken:
    """Refuse the token from now on (kept for the record: who made it, when it was last used)."""
    if token.revoked is None:
        token.revoked, token.revoked_by = now(), by[:150]
        ApiToken.objects.filter(pk=token.pk, revoked__isnull=True).update(
            revoked=token.revoked, revoked_by=token.revoked_by
        )
    return token


def api_token_user(raw: str) -> Any | None:
    """The user a bearer token acts as, or None: unknown, revoked or expired tokens, and users who
    are no longer active staff, are refused. Records when the token was last used."""
    if not raw or not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(digest=token_digest(raw)).first()
    if token is None or token.revoked is not None:
        return None
    at = now()
    if token.expires is not None and token.expires <= at:
        return None
    user = token.user
    if not (user.is_active and user.is_staff):
        return None
    if token.last_used is None or at - token.last_used >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used=at)
    return user
