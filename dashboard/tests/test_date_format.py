"""One date format in the admin and the dashboard: "2026-03-14 14:05", in TIME_ZONE.

The admin's lists, the dashboard's pages and the dashboard's script (live.js, which writes the times
that arrive over the socket) write the same timestamp the same way, whatever the browser's own zone.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from conversations.models import Conversation

LAST = dt.datetime(2026, 3, 14, 13, 5, 42, tzinfo=dt.UTC)  # 14:05 in Paris
LIVE_JS = Path(django_settings.BASE_DIR) / "static" / "dashboard" / "live.js"


@pytest.fixture
def paris(settings):
    settings.TIME_ZONE = "Europe/Paris"


@pytest.fixture
def chat(db, sandbox_agent):
    return Conversation.objects.create(
        agent=sandbox_agent, peer_id=5, kind=Conversation.Kind.DM, title="Bob", last_message_at=LAST
    )


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.mark.django_db
def test_the_admin_list_and_the_dashboard_page_write_a_timestamp_alike(paris, verified, chat):
    admin_page = verified.client.get(reverse("admin:conversations_conversation_changelist"))
    dashboard_page = verified.client.get(reverse("dashboard:agent", args=[chat.agent_id]))
    assert admin_page.status_code == dashboard_page.status_code == 200

    admin_row = re.search(r'<td class="field-last_message_at[^"]*">([^<]*)</td>', admin_page.content.decode())
    assert admin_row is not None
    assert admin_row.group(1) == "2026-03-14 14:05"
    assert "Bob · " in _text(dashboard_page.content.decode())
    assert " · 2026-03-14 14:05" in _text(dashboard_page.content.decode())
    assert '<html lang="en" data-time-zone="Europe/Paris">' in dashboard_page.content.decode()


@pytest.mark.browser
def test_the_dashboards_script_writes_times_as_the_admin_does_in_the_sites_zone(chromium):
    """live.js writes the times that arrive over the socket in the zone the page names (base.html's
    data-time-zone, checked above), not in the browser's zone or format."""
    context = chromium.new_context(timezone_id="America/New_York", locale="de-DE")
    try:
        page = context.new_page()
        page.set_content('<!doctype html><html data-time-zone="Europe/Paris"><body></body></html>')
        page.add_script_tag(path=str(LIVE_JS))
        written = page.evaluate(
            "iso => [Cindy.formatDateTime(iso), Cindy.formatTime(iso), Cindy.formatDateTime(iso, true)]",
            LAST.isoformat(),
        )
    finally:
        context.close()
    assert written == ["2026-03-14 14:05", "14:05:42", "2026-03-14 14:05:42"]
