"""The system checks the gateway and the task workers run as they start: Cindy's own and Django's,
but not the URL configuration's, which would import the API, the admin and the dashboard into
processes that serve none of them (cindy_site/checks.py, ENGINE_CHECK_TAGS)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.conf import settings
from django.core.checks.registry import registry

from cindy_site.checks import CINDY, ENGINE_CHECK_TAGS
from cindy_site.testing.fixtures import sqlite_child_env
from cindy_site.testing.layering import LAYERS

pytestmark = pytest.mark.any_database

#: Cindy's apps, as the layering test places them.
CINDY_APPS = frozenset(app for layer in LAYERS for app in layer)


def test_every_check_of_cindy_carries_its_tag_so_the_engine_runs_it_too():
    untagged = [
        f"{check.__module__}.{check.__name__}"
        for check in registry.get_checks(include_deployment_checks=True)
        if check.__module__.split(".")[0] in CINDY_APPS and CINDY not in getattr(check, "tags", ())
    ]
    assert not untagged, f"register these with @register(CINDY) (cindy_site/checks.py): {untagged}"
    assert CINDY in ENGINE_CHECK_TAGS and "urls" not in ENGINE_CHECK_TAGS


def test_the_gateway_refuses_to_start_on_a_failing_check_of_cindy(tmp_path):
    done = subprocess.run(
        [sys.executable, "manage.py", "runagents"],
        cwd=settings.BASE_DIR,
        env=sqlite_child_env(tmp_path / "db.sqlite3", CINDY_TICK_SECONDS="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "CINDY_TICK_SECONDS is 0.0: it must be positive" in done.stderr


@pytest.mark.parametrize("command", ["runagents", "runworkers"])
def test_the_engine_s_checks_leave_the_url_configuration_unloaded(tmp_path, command):
    code = (
        f"import sys; sys.argv = ['manage.py', {command!r}]\n"
        "import django; django.setup()\n"
        "from django.core import checks\n"
        "from cindy_site.checks import ENGINE_CHECK_TAGS\n"
        "assert not checks.run_checks(tags=ENGINE_CHECK_TAGS)\n"
        "from django.conf import settings\n"
        "loaded = [m for m in (settings.ROOT_URLCONF, 'api.api') if m in sys.modules]\n"
        "print('loaded:', loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=sqlite_child_env(tmp_path / "db.sqlite3"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "loaded: []" in done.stdout, done.stdout
