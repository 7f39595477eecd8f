"""Sign-in with Google (django-allauth's OpenID Connect provider), for staff only.

What the provider's answer leads to:
- a Google account already linked to active staff: signed in, then the one-time-code step
  (`signin_views.otp_step`); the dashboard and the admin stay closed until the code is given;
- an unlinked Google account whose verified address is an active staff user's email: linked to that
  user, then the same. Addresses are compared in Python after `normalised_email`, never by the
  database: MariaDB's collations equate `é` with `e` (and, in some, `ı` with `i`), which would link
  a look-alike domain. When two staff accounts normalise to the same address, neither is linked;
- anybody else: an access request is recorded (`agents.services.access_requests`) and nobody is
  signed in; an owner approves or refuses it in the admin.
allauth never creates a user by itself here: signup is closed.
"""

from __future__ import annotations

import unicodedata

import idna
from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.contrib.auth import get_user_model
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode

from agents.services.access_requests import access_request_record
from cindy_site import clock
from dashboard.access import is_staff_member


def normalised_email(address: str) -> str | None:
    """The one form two spellings of the same address share, or None when `address` has none.

    Steps: NFKC (full-width and compatibility letters become the plain ones), case folding, then
    the domain through IDNA (UTS #46, so a Unicode domain and its punycode compare equal, and a
    look-alike such as `gmaıl` stays another domain)."""
    folded = unicodedata.normalize("NFKC", address.strip()).casefold()
    mailbox, at, domain = folded.rpartition("@")
    if not at or not mailbox or not domain:
        return None
    try:
        ascii_domain = idna.encode(domain, uts46=True).decode("ascii")
    except idna.IDNAError:
        return None
    return f"{mailbox}@{ascii_domain}"


def _staff_with_address(email: str):
    """Active staff whose address normalises to the same as `email` (a few hundred people at most,
    so every one is compared here rather than asking the database to)."""
    wanted = normalised_email(email)
    if wanted is None:
        return []
    candidates = get_user_model().objects.filter(is_active=True, is_staff=True).exclude(email="")
    return [user for user in candidates.only("pk", "email") if normalised_email(user.email) == wanted]


class StaffAccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False

    def get_login_redirect_url(self, request) -> str:
        return reverse("signin_otp")

    def post_login(self, request, user, *, redirect_url: str | None = None, **kwargs):
        """Every sign-in through the provider goes on to the one-time-code step, which then leads
        to where the person was going (`next`)."""
        step = reverse("signin_otp")
        if redirect_url and redirect_url != step:
            step = f"{step}?{urlencode({'next': redirect_url})}"
        return super().post_login(request, user, redirect_url=step, **kwargs)

    def send_notification_mail(self, *args, **kwargs) -> None:
        """Cindy sends no email: an owner sees new links and requests in the admin."""


def _refuse(request, template: str, context: dict, status: int = 403) -> ImmediateHttpResponse:
    return ImmediateHttpResponse(render(request, template, context, status=status))


class StaffSocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request, sociallogin) -> bool:
        return False

    def pre_social_login(self, request, sociallogin) -> None:
        if sociallogin.is_existing:
            if not is_staff_member(sociallogin.user):
                raise _refuse(request, "signin/refused.html", {"email": sociallogin.user.email})
            return
        addresses = sociallogin.email_addresses
        email = addresses[0].email.strip() if addresses else ""
        verified = bool(addresses and addresses[0].verified)
        if not email:
            raise _refuse(
                request, "signin/refused.html", {"email": "", "reason": "the provider gave no email address"}
            )
        staff = _staff_with_address(email) if verified else []
        if len(staff) == 1:
            sociallogin.connect(request, get_user_model().objects.get(pk=staff[0].pk))
            return
        access_request_record(
            provider=sociallogin.account.provider,
            subject=sociallogin.account.uid,
            email=email,
            name=(sociallogin.user.get_full_name() or "").strip(),
            at=clock.now(),
        )
        raise _refuse(request, "signin/requested.html", {"email": email}, status=200)
