"""Settings that stop startup say so in one line.

A setting the operator must fix (no SECRET_KEY with DEBUG off, a mistyped CINDY_ENV_FILE, a number
out of range) raises ImproperlyConfigured while the settings load. `manage.py`, `asgi.py` and `wsgi.py`
load them through `settings_or_exit`, which prints that message alone on stderr and exits with status 1
instead of ending a long traceback with it.
"""

from __future__ import annotations

import os
import sys

from django.core.exceptions import ImproperlyConfigured


def settings_or_exit() -> None:
    """Load the settings; on ImproperlyConfigured print `error: MESSAGE` and exit 1."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cindy_site.settings")
    from django.conf import settings

    try:
        settings.INSTALLED_APPS  # noqa: B018 - reading a setting loads the module
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"error: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(1) from None
