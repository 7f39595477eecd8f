"""The one-time-code step after a Google sign-in, and the URLs of the Google sign-in itself.

allauth signs the person in (a session without an OTP device); `otp_step` then asks for a code from
one of their devices, exactly as the admin's login form does after the password, and marks the
session verified with `django_otp.login`. Until then `request.user.is_verified()` is false, so the
admin, the dashboard, its socket and /metrics stay closed.
"""

from __future__ import annotations

from allauth.socialaccount.providers.openid_connect import urls as oidc_urls
from allauth.socialaccount.views import login_cancelled, login_error
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import include, path, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.generic import RedirectView
from django_otp import devices_for_user
from django_otp import login as otp_login
from django_otp.forms import OTPTokenForm

from dashboard.access import is_staff_member


def _next(request: HttpRequest) -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return target
    return reverse("dashboard:index")


def otp_step(request: HttpRequest) -> HttpResponse:
    user = request.user
    if not is_staff_member(user):
        return redirect("admin:login")
    if user.is_verified():
        return redirect(_next(request))
    if not any(devices_for_user(user, confirmed=True)):
        # Nothing can verify this session: it ends here, and an owner has to add a device first.
        logout(request)
        return render(request, "signin/no_device.html", {"email": user.email}, status=403)
    form = OTPTokenForm(user, request, data=request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        otp_login(request, user.otp_device)
        return redirect(_next(request))
    return render(
        request, "signin/otp_step.html", {"form": form, "next": _next(request), "email": user.email}
    )


#: Mounted under /accounts/ by cindy_site/urls.py only when Google sign-in is configured.
urlpatterns = [
    path("", include(oidc_urls)),  # oidc/<provider>/login/ and its callback
    path("otp/", otp_step, name="signin_otp"),
    # allauth sends errors and cancellations to these names; "account_login" is the admin's login.
    path("login/cancelled/", login_cancelled, name="socialaccount_login_cancelled"),
    path("login/error/", login_error, name="socialaccount_login_error"),
    path("login/", RedirectView.as_view(pattern_name="admin:login"), name="account_login"),
]
