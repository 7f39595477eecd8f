"""Model permissions on views that are not Django's own admin views.

Being verified staff lets a user into the console and the dashboard; what they may change is decided
by Django's model permissions, as on the admin's change pages. `permission_by_method` checks one
permission for reading (GET, HEAD) and another for everything else, and answers 403 when the user
lacks it. Every state-changing URL is walked by `cindy_site/tests/test_permissions_walk.py` with a
verified staff user who holds no permission.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

SAFE_METHODS = ("GET", "HEAD")


def permission_by_method(
    *, read: str | None, write: str
) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Require `read` (when given) for GET and HEAD and `write` for any other method; 403 otherwise."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            needed = read if request.method in SAFE_METHODS else write
            if needed and not request.user.has_perm(needed):
                raise PermissionDenied(f"{request.user.get_username()} lacks the permission {needed}")
            return view(request, *args, **kwargs)

        return wrapper

    return decorator
