"""The admin at 1280 px with the sample personas imported: nothing wider than the window, no list
column cut off, the schedule timeline labelled, readable names and values.

Shares the live site of test_browser.py (one site per module) and the browser of all browser tests.
Screenshots go under artifacts/console-1280/.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import Conversation
from dashboard.tests import test_browser as shared
from dashboard.tests.live_site import MANAGE
from dashboard.tests.test_browser import ARTIFACTS, _log_in, _staff, expect, watched_page

pytestmark = pytest.mark.browser

llm, site, site_db = shared.llm, shared.site, shared.site_db

SHOTS = ARTIFACTS / "console-1280"
WIDTH = 1280


@pytest.fixture(scope="module")
def samples(site) -> None:
    """The sample personas, imported into the site's database as a newcomer does."""
    subprocess.run(
        [sys.executable, MANAGE, "importagents"], env=site.env, check=True, capture_output=True, timeout=300
    )


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    with watched_page(chromium, site, width=WIDTH, height=900, failed_requests=False) as page:
        yield page


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _fits(page, name: str) -> None:
    """Nothing on the page is wider than the window; in a changelist, every column ends inside the
    list's visible box (the list scrolls sideways, hiding what is past its edge)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= WIDTH, f"{name}: the page is {width} px wide at a {WIDTH} px window"
    if page.locator("#result_list").count():
        right = page.locator(".results").bounding_box()
        clipped = [
            th.inner_text()
            for th in page.locator("#result_list thead th").all()
            if th.bounding_box()["x"] + th.bounding_box()["width"] > right["x"] + right["width"] + 1
        ]
        assert not clipped, f"{name}: columns cut off at the list's edge: {clipped}"


def _orla_with_a_busy_day(site) -> Agent:
    from zoneinfo import ZoneInfo

    from django.conf import settings
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import override_settings

    from media_catalog.models import LibraryItem
    from media_catalog.services.library import library_item_upload
    from memory.models import Memory, ScheduleEntry

    orla = Agent.objects.get(name="Orla")
    Conversation.objects.get_or_create(
        agent=orla,
        peer_id=580564790,
        defaults={"kind": "dm", "title": "Sam Whitaker", "username": "samw", "last_message_at": now()},
    )
    Conversation.objects.get_or_create(
        agent=orla,
        peer_id=-100555,
        defaults={"kind": "group", "title": "Canal Towns History Society", "blocked": True, "muted": True},
    )
    Memory.objects.create(
        agent=orla,
        kind="episodic",
        content="Sam's great-grandfather worked the locks at Foxton; "
        + "he kept a ledger of every boat. " * 6,
        created=now(),
        creation_channel="Sam Whitaker",
    )
    day = dt.datetime(2026, 11, 26, tzinfo=ZoneInfo("Europe/London"))
    ScheduleEntry.objects.filter(agent=orla).delete()
    for start, end, activity, responsiveness in DAY:
        ScheduleEntry.objects.create(
            agent=orla,
            activity=activity,
            description=f"{activity}, as on every weekday",
            start=day + dt.timedelta(hours=start),
            end=day + dt.timedelta(hours=end),
            responsiveness=responsiveness,
            created=now(),
        )
    photo = (settings.BASE_DIR / "samples" / "media" / "AgADCanalPhoto5.png").read_bytes()
    with override_settings(MEDIA_ROOT=site.workdir / "media"):  # where the site serves it from
        library_item_upload(
            agent_id=orla.pk,
            upload=SimpleUploadedFile("canal.png", photo, content_type="image/png"),
            description="The canal at Foxton locks, ten locks in a staircase, seen from the top lock.",
        )
    LibraryItem.objects.get_or_create(
        agent=orla,
        unique_id="AgADCanalPhoto5",
        defaults={
            "kind": "photo",
            "description": "A narrowboat moored by a lock on the Grand Union canal at dusk, lamps lit in "
            "the windows and smoke rising from the chimney of the lock keeper's cottage.",
        },
    )
    return orla


DAY = [
    (0, 8.5, "Asleep", 0),
    (8.5, 9, "Breakfast and the morning paper", 30),
    (9, 12, "Opening the reading room and sorting returns", 20),
    (12, 13, "Lunch", 60),
    (13, 14, "Cataloguing", 40),
    (14, 17, "Reference desk", 100),
    (17, 22, "Reading at home", 50),
    (22, 24, "Asleep", 0),
]


def test_changelists_and_the_agent_page_fit_a_1280_px_window(samples, site_db, page):
    orla = _orla_with_a_busy_day(site_db)
    _log_in(page, _staff("operator"), next_url="/admin/")
    pages = [
        ("conversations", "/admin/conversations/conversation/", ["Flags", "Active graph"]),
        ("library", "/admin/media_catalog/libraryitem/", ["Description"]),
        ("schedule", "/admin/memory/scheduleentry/", ["Timeline"]),
        ("agent", f"/admin/agents/agent/{orla.pk}/change/", []),
        ("agents", "/admin/agents/agent/", []),
        ("memories", "/admin/memory/memory/", []),
    ]
    for name, path, columns in pages:
        page.goto(path)
        _shot(page, name)
        _fits(page, name)
        for column in columns:
            expect(page.locator("#result_list thead th", has_text=column)).to_be_visible()
    page.goto("/admin/conversations/conversation/")
    expect(page.locator("#result_list tr", has_text="Canal Towns").locator("td.field-flags")).to_have_text(
        "muted · blocked"
    )
    page.goto("/admin/memory/scheduleentry/")
    row = page.locator("#result_list tr", has_text="Reference desk")
    expect(row.locator("td.field-when")).to_have_text("2026-11-26 14:00–17:00")
    row.get_by_role("link", name="day view").click()
    expect(page.locator("#timeline")).to_be_visible()
    assert page.problems == []


def test_the_schedule_timeline_labels_each_entry_and_keeps_neighbours_apart(samples, site_db, page):
    orla = _orla_with_a_busy_day(site_db)
    _log_in(
        page, _staff("operator"), next_url=f"/admin/memory/scheduleentry/timeline/{orla.pk}/?day=2026-11-26"
    )
    blocks = page.locator("#timeline a.cindy-block")
    expect(blocks).to_have_count(len(DAY))
    _shot(page, "timeline")
    _fits(page, "timeline")
    looks = blocks.evaluate_all(
        """links => links.map(a => {
            const style = getComputedStyle(a), box = a.getBoundingClientRect();
            return {color: style.color, background: style.backgroundColor, left: box.left, right: box.right,
                    text: a.innerText};
        })"""
    )
    for look in looks:
        assert look["color"] == "rgb(255, 255, 255)" != look["background"], look  # a readable label
    for before, after in zip(looks, looks[1:], strict=False):
        assert before["right"] <= after["left"] + 0.5, "blocks overlap"
        assert before["background"] != after["background"], "two neighbours look like one entry"
    expect(blocks.nth(5)).to_contain_text("Reference desk")
    entries = page.locator("#timeline-entries tbody tr")
    expect(entries).to_have_count(len(DAY))
    for index, (_start, _end, activity, _responsiveness) in enumerate(DAY):
        expect(entries.nth(index)).to_contain_text(activity)  # also those too narrow for their label
    expect(entries.nth(1)).to_contain_text("08:30")
    assert page.problems == []


def test_the_schedule_prints_as_a_table_without_the_consoles_controls(samples, site_db, page):
    orla = _orla_with_a_busy_day(site_db)
    _log_in(
        page, _staff("operator"), next_url=f"/admin/memory/scheduleentry/timeline/{orla.pk}/?day=2026-11-26"
    )
    page.locator("#print-link").click()
    expect(page.locator("h1")).to_have_text("Schedule — Orla")
    expect(page.locator("#print-zone")).to_have_text("Timezone: Europe/London (+00:00)")
    rows = page.locator("#print-table tbody tr")
    expect(rows).to_have_count(len(DAY))
    expect(rows.nth(5)).to_contain_text("Thu 2026-11-26 14:00")
    expect(rows.nth(5)).to_contain_text("Reference desk")
    expect(page.locator("#print-button")).to_be_visible()
    _fits(page, "schedule-print")

    page.emulate_media(media="print")
    _shot(page, "schedule-print")
    expect(page.locator("#print-button")).to_be_hidden()
    expect(page.locator("#print-range")).to_be_hidden()
    expect(rows.nth(7)).to_be_visible()
    assert page.pdf(format="A4")[:5] == b"%PDF-"  # Chromium lays the page out for paper
    page.emulate_media(media="screen")
    assert page.problems == []


def test_the_admin_reads_in_words_not_raw_names_or_json(samples, site_db, page):
    orla = Agent.objects.get(name="Orla")
    _log_in(page, _staff("operator"), next_url="/admin/")
    index = page.locator("#content").inner_text()
    for raw in ("OTP_STATIC", "OTP_TOTP", "Schedule refreshs"):
        assert raw not in index.upper() if raw.isupper() else raw not in index
    expect(page.locator("#content")).to_contain_text("Schedule planning times")
    expect(page.locator("#content th", has_text="Sign-in: backup codes")).to_have_count(1)
    expect(page.locator("#content th", has_text="Sign-in: authenticator apps")).to_have_count(1)
    _shot(page, "index")

    page.goto(f"/admin/agents/agent/{orla.pk}/change/")
    expect(page.locator(".field-run_state .readonly")).to_have_text("Running")
    expect(page.locator("#id_role_prompt_names").get_by_label("Chatbot (global)")).to_be_checked()
    expect(page.locator("#id_role_prompt_names label", has_text="Instructions")).to_have_count(0)
    expect(page.locator("#id_extra_sections")).to_have_value("")
    expect(page.locator("#id_flag_notes")).to_have_value("")
    persona = page.locator("fieldset", has_text="Persona").first.inner_text()
    flags = page.locator("fieldset", has_text="Flag notes").first.inner_text()
    assert "[]" not in persona and "{}" not in flags, "an empty value is shown as JSON"

    page.fill("#id_extra_sections", "# Mood Board\nSunny, with a chance of puns.\n\n# Motto\nLook it up.")
    page.fill("#id_flag_notes", "# Gagged\nQuiet until the launch.")
    page.click("input[name=_continue]")
    expect(page.locator(".messagelist .success")).to_be_visible()
    orla.refresh_from_db()
    assert orla.extra_sections == [["Mood Board", "Sunny, with a chance of puns."], ["Motto", "Look it up."]]
    assert orla.flag_notes == {"Gagged": "Quiet until the launch."}
    assert "Instructions" not in orla.role_prompt_names and "Chatbot" in orla.role_prompt_names
    expect(page.locator("#id_extra_sections")).to_have_value(
        "# Mood Board\nSunny, with a chance of puns.\n\n# Motto\nLook it up."
    )
    _shot(page, "agent-persona")

    page.fill("#id_flag_notes", "Quiet until the launch.")
    page.click("input[name=_continue]")
    expect(page.locator(".errorlist")).to_contain_text(
        'line 1, "Quiet until the launch.": start with a "# Heading"'
    )
    assert page.problems == []


def test_what_orla_sees_and_her_users_at_1280_px(samples, site_db, page):
    """Her curated memories about Sam (from the samples), what she stored, and her own chat read as
    Saved Messages and kept out of the users."""
    from conversations.models import Message
    from memory.services.stored import stored_entry_apply
    from memory.stored_kinds import StoreContext

    orla = _orla_with_a_busy_day(site_db)
    Agent.objects.filter(pk=orla.pk).update(telegram_user_id=700700)
    sam = Conversation.objects.get(agent=orla, peer_id=580564790)
    Message.objects.get_or_create(
        conversation=sam,
        message_id=1,
        defaults={"sender_id": 580564790, "sender_name": "Sam", "date": now(), "text": "Any news on Foxton?"},
    )
    store = StoreContext(agent_id=orla.pk, channel_id=sam.peer_id, channel_name="Sam Whitaker")
    stored_entry_apply(kind="note", context=store, entry_id="note-foxton", content="Sam is visiting Foxton")
    stored_entry_apply(kind="plan", context=store, entry_id="plan-ledger", content="Find the lock ledger")
    stored_entry_apply(
        kind="event",
        context=store,
        entry_id="event-visit",
        content="Ask how the visit went",
        params={"time": "2031-05-01 10:00"},
    )
    own = Conversation.objects.create(
        agent=orla, peer_id=700700, kind="dm", title="Orla", last_message_at=now()
    )
    _log_in(page, _staff("operator"), next_url=f"/dashboard/conversations/{sam.pk}/")

    for section, text in [
        ("curated_memories", "Likes short answers first"),
        ("stored:note", "Sam is visiting Foxton"),
        ("stored:plan", "Find the lock ledger"),
        ("stored:event", "Ask how the visit went"),
        ("stored:remember", "Sam's great-grandfather worked the locks at Foxton"),
    ]:
        expect(page.locator(f".seen-section[data-section='{section}']")).to_contain_text(text)
    expect(page.locator(".seen-section[data-section='final']")).to_contain_text("# Current Time")
    _shot(page, "what-orla-sees")
    _fits(page, "what the agent sees")

    page.goto(f"/dashboard/conversations/{own.pk}/")
    expect(page.locator("h1")).to_have_text("Orla ↔ Saved Messages")
    page.goto("/dashboard/users/")
    expect(page.locator("#users-table tr[data-peer-id='580564790']")).to_contain_text("Orla")
    expect(page.locator("#users-table tr[data-peer-id='700700']")).to_have_count(0)
    _shot(page, "users")
    _fits(page, "users")
    assert page.problems == []
