"""Sign-in with Google (django-allauth's OpenID Connect provider), for staff only.

What the provider's answer leads to:
- a Google account already linked to active staff: signed in, then the one-time-code step
  (`signin_views.otp_step`); the dashboard and the admin stay closed until the code is given;
- an unlinked Google account whose verified address is an active staff user's email: linked to that
  user, then the same;
- anybody else: an access request is recorded (`agents.services.access_requests`) and nobody is
  signed in; an owner approves or refuses it in the admin.
allauth never creates a user by itself here: signup is closed.
"""

from __future__ import annotations

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
        staff = get_user_model().objects.filter(email__iexact=email, is_active=True, is_staff=True)
        user = staff.first() if verified and staff.count() == 1 else None
        if user is not None:
            sociallogin.connect(request, user)
            return
        access_request_record(
            provider=sociallogin.account.provider,
            subject=sociallogin.account.uid,
            email=email,
            name=(sociallogin.user.get_full_name() or "").strip(),
            at=clock.now(),
        )
        raise _refuse(request, "signin/requested.html", {"email": email}, status=200)
