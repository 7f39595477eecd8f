"""Who may see the dashboard and the sandbox chat: active staff verified by an OTP device.

Views get `request.user.is_verified()` from django-otp's middleware. WebSockets have no middleware
of that kind, so `socket_user_is_verified` repeats its check from the session in the scope: the
device recorded at login must exist, belong to the user and be confirmed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.models import Device


def is_staff_member(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


def request_user_is_verified(request: HttpRequest) -> bool:
    user = request.user
    return is_staff_member(user) and bool(getattr(user, "is_verified", lambda: False)())


def verified_staff_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Send anyone who is not OTP-verified staff to the admin login, then back here."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request_user_is_verified(request):
            return redirect_to_login(request.get_full_path(), reverse("admin:login"))
        return view(request, *args, **kwargs)

    return wrapper


def socket_user_is_verified(scope: dict[str, Any]) -> bool:
    """The OTPMiddleware check for a WebSocket scope (runs the DB lookup: call it from a thread)."""
    user = scope.get("user")
    if not is_staff_member(user):
        return False
    session = scope.get("session")
    persistent_id = session.get(DEVICE_ID_SESSION_KEY) if session is not None else None
    if not persistent_id:
        return False
    device = Device.from_persistent_id(persistent_id)
    return device is not None and device.user_id == user.pk and bool(device.confirmed)
