"""Settings that stop startup say so in one line.

A setting the operator must fix (no SECRET_KEY with DEBUG off, a mistyped CINDY_ENV_FILE, a number
out of range) raises ImproperlyConfigured while the settings load. `manage.py`, `asgi.py` and `wsgi.py`
load them through `settings_or_exit`, which prints that message alone on stderr and exits with status 1
instead of ending a long traceback with it.
"""

from __future__ import annotations

import os
import signal
import sys

from django.core.exceptions import ImproperlyConfigured

#: The signal that makes a Cindy process (any `manage.py` command: the gateway, the workers and their
#: pool, `runserver`; and the web server under daphne, `cindy_site/asgi.py`) write every thread's
#: stack to its stderr.
STACKS_SIGNAL = signal.SIGUSR1


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


def dump_stacks_on_signal(file=None) -> None:
    """On SIGUSR1, write every thread's Python stack to `file` (stderr: the process's log) and go on.

    For a process that seems stuck: `kill -USR1 PID` shows where each of its threads waits, without
    stopping it. The handler is faulthandler's, in C: it runs even while the main thread is blocked
    in a call that holds the GIL. Processes forked afterwards (the worker pool) inherit it."""
    import faulthandler

    if signal.getsignal(STACKS_SIGNAL) not in (signal.SIG_DFL, None):
        return  # the server running us handles it itself (gunicorn reopens its logs on SIGUSR1)
    faulthandler.register(STACKS_SIGNAL, file=file or sys.stderr, all_threads=True, chain=False)
