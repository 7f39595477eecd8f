"""Access requests: a first sign-in through an identity provider by an address no staff account has.

Recording one creates nothing else. An owner approves it in the admin: then a staff account exists
(active, without a usable password, in no role, with no grants) and is linked to the provider's
subject, so the person's next sign-in lands on the one-time-code step. Until an owner gives the
account a role and an OTP device, it can do nothing.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction

from agents.models import AccessRequest


class AccessRequestError(Exception):
    pass


@transaction.atomic
def access_request_record(
    *, provider: str, subject: str, email: str, name: str, at: dt.datetime
) -> AccessRequest:
    """Record (or count again) a sign-in attempt by an unknown person."""
    row, created = AccessRequest.objects.get_or_create(
        provider=provider,
        subject=subject,
        defaults={"email": email, "name": name[:150], "requested": at, "last_attempt": at},
    )
    if not created:
        row.attempts += 1
        row.last_attempt = at
        row.email, row.name = email, name[:150]
        row.save(update_fields=["attempts", "last_attempt", "email", "name"])
    return row


@transaction.atomic
def access_request_approve(*, access_request: AccessRequest, by, at: dt.datetime):
    """Create the staff account (no role, no password) and link it to the provider's subject."""
    from allauth.socialaccount.models import SocialAccount

    row = AccessRequest.objects.select_for_update().get(pk=access_request.pk)
    if row.status != AccessRequest.Status.PENDING:
        raise AccessRequestError(
            f"access request of {row.email} is already {row.get_status_display().lower()}"
        )
    users = get_user_model()
    if users.objects.filter(username__iexact=row.email).exists():
        raise AccessRequestError(
            f"access request of {row.email}: a user named {row.email} already exists; give that account "
            "the role it needs instead, and refuse this request"
        )
    first, _, last = row.name.partition(" ")
    user = users.objects.create(
        username=row.email,
        email=row.email,
        first_name=first[:150],
        last_name=last[:150],
        is_staff=True,
        is_active=True,
        password=make_password(None),
    )
    SocialAccount.objects.create(user=user, provider=row.provider, uid=row.subject, extra_data={})
    row.status, row.decided, row.decided_by, row.user = AccessRequest.Status.APPROVED, at, by, user
    row.save(update_fields=["status", "decided", "decided_by", "user"])
    return user


def access_request_refuse(*, access_request: AccessRequest, by, at: dt.datetime) -> None:
    updated = AccessRequest.objects.filter(pk=access_request.pk, status=AccessRequest.Status.PENDING).update(
        status=AccessRequest.Status.REFUSED, decided=at, decided_by=by
    )
    if not updated:
        raise AccessRequestError(f"access request of {access_request.email} is no longer pending")
