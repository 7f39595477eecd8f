"""Who may see the dashboard and the sandbox chat: active staff verified by an OTP device.

Views get `request.user.is_verified()` from django-otp's middleware. WebSockets have no middleware
of that kind, so `socket_user_is_verified` repeats its check from the session in the scope: the
device recorded at login must exist, belong to the user and be confirmed. A socket lives for hours,
so `socket_session_still_verified` re-reads the session row, the user and the device from the
database: logging out, a password change, losing staff or active status, or a deleted or
unconfirmed device all end it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.contrib import auth
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
    return _device_confirmed(persistent_id, user)


def _device_confirmed(persistent_id: str | None, user: Any) -> bool:
    if not persistent_id:
        return False
    device = Device.from_persistent_id(persistent_id)
    return device is not None and device.user_id == user.pk and bool(device.confirmed)


def socket_session_still_verified(*, session_key: str | None, user_pk: Any) -> bool:
    """The same check as `socket_user_is_verified`, on fresh rows instead of what the scope cached
    at connect: the session (gone after logout), its user (same person, still active staff, same
    password) and the OTP device. Runs DB lookups: call it from a thread."""
    if not session_key:
        return False
    session = import_module(settings.SESSION_ENGINE).SessionStore(session_key=session_key)
    # django.contrib.auth.get_user only needs `.session`; it also checks the password hash.
    user = auth.get_user(SimpleNamespace(session=session))
    if not is_staff_member(user) or user.pk != user_pk:
        return False
    return _device_confirmed(session.get(DEVICE_ID_SESSION_KEY), user)


def viewer_agent_ids(request: HttpRequest) -> frozenset[int] | None:
    """The agents the signed-in user may see on the dashboard (None: all; `agents.access`)."""
    from agents.access import visible_agent_ids

    return visible_agent_ids(request.user)


def visible_conversation_or_404(request: HttpRequest, conversation_id: int):
    """The conversation, if its agent is one the user may see; 404 otherwise (as if it did not exist)."""
    from django.shortcuts import get_object_or_404

    from agents.access import visible_to
    from conversations.models import Conversation

    queryset = visible_to(request.user, Conversation.objects.select_related("agent"))
    return get_object_or_404(queryset, pk=conversation_id)
