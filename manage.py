#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main():
    """Run administrative tasks."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cindy_site.settings")
    try:
        from django.core.management import execute_from_command_line
    except ImportError as exc:
        raise ImportError(
            "Couldn't import Django. Are you sure it's installed and "
            "available on your PYTHONPATH environment variable? Did you "
            "forget to activate a virtual environment?"
        ) from exc
    from cindy_site.startup import dump_stacks_on_signal, settings_or_exit

    dump_stacks_on_signal()  # `kill -USR1 PID`: the process's thread stacks on its stderr
    settings_or_exit()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
