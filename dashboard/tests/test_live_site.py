"""The browser tests' live site (dashboard/tests/live_site.py): it serves on a port of its own even when
another process takes the free port it picked first, so a page never talks to that other process."""

from __future__ import annotations

import socket
import urllib.request

import pytest

from dashboard.tests import live_site
from dashboard.tests.live_site import LiveSite

pytestmark = pytest.mark.slow


def test_the_site_moves_to_another_port_when_its_first_one_is_taken(
    site_template, tmp_path_factory, django_db_blocker, monkeypatch
):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()  # another process's server, listening where the site will try first
    picks = iter([taken.getsockname()[1]])
    real = live_site._free_port
    monkeypatch.setattr(live_site, "_free_port", lambda: next(picks, None) or real())
    with django_db_blocker.unblock():
        site = LiveSite(tmp_path_factory.mktemp("port"), llm_url="http://127.0.0.1:9", template=site_template)
        try:
            site.start()
            assert site.port != taken.getsockname()[1]
            assert f"Couldn't listen on 127.0.0.1:{taken.getsockname()[1]}" in site.log("web")
            with urllib.request.urlopen(f"{site.url}/admin/login/", timeout=30) as answer:  # noqa: S310
                assert answer.status == 200  # the site's own server answers on the port it reports
        finally:
            site.stop()
            taken.close()
