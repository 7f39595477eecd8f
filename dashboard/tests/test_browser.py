"""The staff web in Chromium: OTP login, the live dashboard, the sandbox chat, hostile data inert.

The site runs as real processes (`runserver`, and `runagents` with its django-q2 workers) on a
database of its own (see live_site.py); the LLM is the local fake server. Screenshots of the
dashboard and the sandbox chat are saved under artifacts/.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.utils import timezone
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, AgentLease
from cindy_site.testing.fake_llm import FakeLLMServer
from conversations.services.activity import record_event
from dashboard.tests.conftest import HOSTILE
from dashboard.tests.live_site import LiveSite
from media_catalog.models import MediaDescription, Sticker, StickerSet
from sandbox.services.chats import sandbox_say

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

ARTIFACTS = Path(settings.BASE_DIR) / "artifacts"
PASSWORD = "correct horse battery staple"
#: The agents act after typing; these keep each turn to a second or two.
FAST_TYPING = {"start_typing_delay": 1, "typing_speed": 1000}


def tasks(*items: dict) -> str:
    return json.dumps(list(items))


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        server.set_default_reply(tasks())
        yield server


@pytest.fixture(scope="module")
def site(llm, site_template, tmp_path_factory, django_db_blocker) -> Iterator[LiveSite]:
    with django_db_blocker.unblock():
        live = LiveSite(tmp_path_factory.mktemp("site"), llm_url=llm.url, template=site_template)
        try:
            yield live.start()
        finally:
            live.stop()


@pytest.fixture
def site_db(chromium, site, django_db_blocker, monkeypatch) -> Iterator[LiveSite]:
    """The test's ORM writes go to the live site's database.

    Playwright's sync API keeps an event loop running in this thread, which Django's async-safety
    check mistakes for async code; the ORM calls here are plain synchronous ones. Playwright must
    be running before the connection is switched (hence `chromium` first): Django keeps connections
    per execution context, and a switch made before Playwright starts is not seen by the test.
    """
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with django_db_blocker.unblock(), site.connected():
        yield site


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    context = chromium.new_context(base_url=site.url, viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.site = site
    page.set_default_timeout(15_000)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.dialogs = dialogs
    try:
        yield page
    finally:
        context.close()


@contextmanager
def watched_page(chromium, site, *, width: int, height: int, failed_requests: bool) -> Iterator[object]:
    """A page on `site` whose `problems` list collects console errors and uncaught page errors (and,
    with `failed_requests`, every HTTP response of 400 or more): tests assert it stays empty."""
    context = chromium.new_context(base_url=site.url, viewport={"width": width, "height": height})
    page = context.new_page()
    page.site = site
    page.set_default_timeout(15_000)
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    if failed_requests:
        page.on(
            "response",
            lambda r: problems.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None,
        )
    page.problems = problems
    try:
        yield page
    finally:
        context.close()


@functools.cache
def _password_hash() -> str:
    """PASSWORD hashed once (the hasher is slow by design), the same valid hash for every user."""
    return make_password(PASSWORD)


def _staff(name: str) -> TOTPDevice:
    user = get_user_model().objects.create(
        username=f"{name}-{secrets.token_hex(3)}", password=_password_hash(), is_staff=True, is_superuser=True
    )
    return TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)


def _code(device: TOTPDevice) -> str:
    code = totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits, drift=device.drift)
    return f"{code:0{device.digits}d}"


def _log_in(page, device: TOTPDevice, *, next_url: str = "/admin/") -> None:
    """Open `next_url` signed in as `device`'s user with a password and a one-time code: the
    session the login form leaves (`_log_in_with_the_form`), put in the browser as its cookie."""
    page.context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": page.site.session_for(device), "url": page.site.url}]
    )
    page.goto(next_url)


def _log_in_with_the_form(
    page, device: TOTPDevice, *, next_url: str = "/admin/", code: str | None = None
) -> None:
    """The admin's login form, filled once: a user with one device is signed in by the first submit."""
    page.goto(f"/admin/login/?next={next_url}")
    page.fill("#id_username", device.user.username)
    page.fill("#id_password", PASSWORD)
    page.fill("#id_otp_token", code or _code(device))
    page.click("input[type=submit][value='Log in']")


def _agent(name: str, **fields) -> Agent:
    return Agent.objects.create(
        name=name,
        phone="+15550001111",
        instructions="Be brief.",
        transport="sandbox",
        llm="gemini",
        **{**FAST_TYPING, **fields},
    )


def test_staff_logs_in_with_password_and_totp_then_opens_the_dashboard(site_db, page):
    ARTIFACTS.mkdir(exist_ok=True)
    device = _staff("operator")
    _log_in_with_the_form(page, device)
    expect(page).to_have_url(re.compile(r"/admin/$"))
    expect(page.locator("#site-name")).to_contain_text("Cindy")
    page.screenshot(path=str(ARTIFACTS / "admin-index.png"))
    page.get_by_role("link", name="Dashboard", exact=True).click()
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    expect(page.locator("#live-status")).to_have_text("live")


def test_wrong_one_time_code_keeps_the_dashboard_closed(site_db, page):
    device = _staff("operator")
    wrong = "000000" if _code(device) != "000000" else "111111"
    _log_in_with_the_form(page, device, next_url="/dashboard/", code=wrong)
    expect(page.locator(".errornote")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/admin/login/"))
    page.goto("/dashboard/")
    expect(page).to_have_url(re.compile(r"/admin/login/"))


def test_dashboard_updates_live_when_a_sandbox_message_is_processed(site_db, page, llm):
    agent = _agent(f"Dora {secrets.token_hex(2)}")
    device = _staff("watcher")
    _log_in(page, device, next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#agents-table")).to_contain_text(agent.name)

    # An event written by another process reaches the page in under a second.
    record_event("info", agent_id=agent.pk, summary="relay check")
    expect(page.locator("#activity")).to_contain_text("relay check", timeout=1000)

    llm.reply_with(
        tasks({"kind": "send", "text": "Hello from the sandbox!"}), input_tokens=1000, cached_tokens=250
    )
    site_db.start_gateway()
    sandbox_say(agent=agent, text="hi Dora", as_name="Alice")

    activity = page.locator("#activity")
    expect(activity).to_contain_text("Hello from the sandbox!", timeout=60_000)
    expect(
        page.locator("#agents-table tr", has_text=agent.name).locator("td.badges .badge").first
    ).to_have_text("connected", timeout=15_000)
    card = page.locator("article.conversation", has_text=agent.name)
    expect(card.locator("tr.node.status-done")).to_have_count(2, timeout=15_000)
    expect(card).to_contain_text("received")
    expect(card).to_contain_text("send")
    expect(page.locator("#usage-table")).to_contain_text(agent.name, timeout=15_000)
    # The cached share of today's calls, as the provider reported it.
    expect(page.locator("#usage-table tr", has_text=agent.name)).to_contain_text("25.0 %")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)


def test_an_agent_with_an_invalid_timezone_shows_its_notice_in_the_agents_table(site_db, page):
    agent = _agent(f"Tess {secrets.token_hex(2)}", timezone="Mars/Base")
    _log_in(page, _staff("watcher"), next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    row = page.locator("#agents-table tr", has_text=agent.name)
    expect(row.locator("td.error .notice")).to_contain_text('Agent Timezone "Mars/Base" is not an IANA zone')


def test_the_agents_badge_says_whether_a_gateway_drives_it_not_its_telegram_status(site_db, page):
    # A lease a gateway holds makes the agent "connected"; whether Telegram shows it online is the
    # activity stream's "shown online on Telegram" line, so the two words never contradict each other.
    # The gateway an earlier test of this module left running takes any agent it sees without a
    # lease: the held one comes with its lease (one commit), the idle one is disabled.
    at = timezone.now()
    with transaction.atomic():
        held = _agent(f"Hal {secrets.token_hex(2)}")
        AgentLease.objects.create(
            agent=held,
            holder="gw-host:1:ab",
            acquired_at=at,
            heartbeat_at=at,
            expires_at=at + dt.timedelta(days=1),
        )
    idle = _agent(f"Ida {secrets.token_hex(2)}", disabled=True)
    _log_in(page, _staff("watcher"), next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    badge = page.locator("#agents-table tr", has_text=held.name).locator("td.badges .badge").first
    expect(badge).to_have_text("connected")
    expect(badge).to_have_attribute("title", "A gateway drives it: gw-host:1:ab")
    expect(
        page.locator("#agents-table tr", has_text=idle.name).locator("td.badges .badge").first
    ).to_have_text("not connected")


def test_an_event_committed_after_a_newer_one_is_shown_in_id_order(site_db, page):
    from cindy_site.clock import now
    from conversations.models import ActivityEvent

    agent = _agent(f"Olga {secrets.token_hex(2)}")
    device = _staff("orderly")
    _log_in(page, device, next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    base = record_event("info", agent_id=agent.pk, summary="order base").pk
    expect(page.locator("#activity")).to_contain_text("order base", timeout=5000)

    # Ids are taken at insert but seen at commit: the newer id becomes visible before the older.
    # (Far above base, so that events other processes write meanwhile cannot take these ids.)
    newer, older = base + 1000, base + 999
    ActivityEvent.objects.create(id=newer, kind="info", agent=agent, summary="newer id", created=now())
    expect(page.locator("#activity")).to_contain_text("newer id", timeout=5000)
    ActivityEvent.objects.create(id=older, kind="info", agent=agent, summary="older id", created=now())
    expect(page.locator("#activity")).to_contain_text("older id", timeout=5000)

    ids = [
        int(i)
        for i in page.locator("#activity li").evaluate_all("items => items.map(i => i.dataset.eventId)")
    ]
    assert {newer, older, base} <= set(ids)
    assert ids == sorted(ids, reverse=True)
    assert len(ids) == len(set(ids))


def test_sandbox_chat_round_trip_with_the_fake_llm(site_db, page, llm):
    agent = _agent(f"Sunny {secrets.token_hex(2)}", sticker_set_names=["WendyFaces"])
    sticker_set, _ = StickerSet.objects.get_or_create(
        short_name="WendyFaces", defaults={"title": "Wendy's faces"}
    )
    Sticker.objects.get_or_create(sticker_set=sticker_set, unique_id="AgADwink", defaults={"name": "wink"})
    MediaDescription.objects.get_or_create(unique_id="AgADwink", defaults={"description": "a cheeky wink"})
    device = _staff("tester")
    _log_in(page, device, next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Alice")
    page.click("text=Open chat")
    expect(page.locator("#live-status")).to_have_text("live")

    # Remember every typing indicator shown: the agent types for about a second before it replies.
    page.evaluate(
        """window.typingSeen = [];
        new MutationObserver(() => window.typingSeen.push(document.getElementById("typing").textContent))
            .observe(document.getElementById("typing"), {childList: true, characterData: true, subtree: true});"""
    )
    llm.reply_with(tasks({"kind": "send", "text": "Hi Alice, lovely to meet you."}))
    site_db.start_gateway()
    page.fill("#message-text", "Hello there")
    page.click("#send")

    transcript = page.locator("#transcript")
    expect(transcript.locator(".bubble.mine")).to_contain_text("Hello there")
    expect(transcript.locator(".bubble.agent")).to_contain_text(
        "Hi Alice, lovely to meet you.", timeout=60_000
    )
    expect(page.locator("#graph tr.node.status-done")).to_have_count(2, timeout=15_000)
    assert f"{agent.name} is typing…" in page.evaluate("window.typingSeen")

    # A photo with a caption. (Scripted replies are used in order, so each turn waits for the last.)
    # Its description is already known, so the turn makes no media description call that would take
    # the scripted reply; the sandbox names photos by content hash, like Telegram's unique ids.
    MediaDescription.objects.create(
        unique_id=f"sbx{hashlib.sha256(_PNG).hexdigest()[:29]}",
        kind="photo",
        description="A small test picture.",
        status=MediaDescription.Status.OK,
    )
    llm.reply_with(tasks({"kind": "send", "text": "What a picture!"}))
    page.set_input_files("#photo", files=[{"name": "cat.png", "mimeType": "image/png", "buffer": _PNG}])
    page.fill("#message-text", "my cat")
    page.click("#send")
    expect(transcript.locator(".bubble.mine img")).to_have_count(1)
    expect(transcript.locator(".bubble.agent", has_text="What a picture!")).to_have_count(1, timeout=60_000)

    # A reaction on the agent's first reply (the agent answers with nothing: the default reply).
    agent_bubble = transcript.locator(".bubble.agent").first
    agent_bubble.locator("text=React").click()
    agent_bubble.locator("button[aria-label='react 👍']").click()
    expect(agent_bubble.locator(".reactions")).to_contain_text("👍 1")

    # A reply quotes the message it answers.
    agent_bubble.locator("text=Reply").click()
    expect(page.locator("#replying")).to_contain_text("Replying to")
    page.fill("#message-text", "you too")
    page.click("#send")
    expect(transcript.locator(".bubble.mine", has_text="you too").locator(".quote")).to_contain_text(
        "Hi Alice, lovely to meet you."
    )

    # A sticker from the agent's own set, picked by its description.
    page.select_option("#sticker", label="WendyFaces · wink — a cheeky wink")
    page.click("#send")
    expect(transcript.locator(".bubble.mine", has_text="sticker wink · WendyFaces")).to_have_count(1)

    # Bad input gets a clear error and sends nothing.
    page.set_input_files(
        "#photo", files=[{"name": "notes.png", "mimeType": "image/png", "buffer": b"plain text"}]
    )
    page.click("#send")
    expect(page.locator("#send-errors")).to_contain_text("is not an image")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sandbox-chat.png"), full_page=True)


def test_a_voice_note_plays_in_the_sandbox_chat(site_db, page, settings):
    """The chat shows a voice note with its length and an audio player the browser can load."""
    from cindy_site.testing.audio import voice_note
    from sandbox.services.voice import sandbox_voice_part

    agent = _agent(f"Vera {secrets.token_hex(2)}")
    device = _staff("listener")
    settings.MEDIA_ROOT = site_db.workdir / "media"  # the live site's store, where `sandbox voice` writes
    sandbox_say(agent=agent, as_name="Alice", media=[sandbox_voice_part(voice_note(2.0), name="hi.ogg")])
    _log_in(page, device, next_url="/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", "Alice")
    page.click("text=Open chat")

    bubble = page.locator("#transcript .bubble.mine")
    expect(bubble.locator(".media.voice")).to_contain_text("voice 2.0 s")
    player = bubble.locator("audio")
    expect(player).to_have_count(1)
    duration = player.evaluate(
        """audio => new Promise((resolve, reject) => {
            if (audio.readyState >= 1) return resolve(audio.duration);
            audio.addEventListener("loadedmetadata", () => resolve(audio.duration));
            audio.addEventListener("error", () => reject(new Error("the voice note did not load")));
            audio.load();
        })"""
    )
    assert abs(duration - 2.0) < 0.1


def test_hostile_names_and_messages_are_inert_in_the_browser(site_db, page, llm):
    agent = _agent(f"Eve {secrets.token_hex(2)} {HOSTILE}")
    device = _staff("auditor")
    sandbox_say(agent=agent, text=HOSTILE, as_name=f"Mallory {HOSTILE}", group=f"Club {HOSTILE}")
    record_event("node_failed", agent_id=agent.pk, summary=f"error: {HOSTILE}")
    _log_in(page, device, next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#agents-table")).to_contain_text(HOSTILE)
    expect(page.locator("#activity")).to_contain_text(f"error: {HOSTILE}")

    page.goto("/dashboard/sandbox/")
    page.select_option("#id_agent", label=agent.name)
    page.fill("#id_as_name", f"Mallory {HOSTILE}")
    page.fill("#id_group", f"Club {HOSTILE}")
    page.click("text=Open chat")
    expect(page.locator("#chat-title")).to_have_text(f"Club {HOSTILE}")
    expect(page.locator("#transcript .bubble")).to_contain_text(HOSTILE)
    page.click("#mention")
    page.type("#message-text", "what do you think?")
    page.click("#send")
    expect(page.locator("#transcript .bubble.mine", has_text="what do you think?")).to_contain_text("@")

    assert page.dialogs == []
    assert page.locator("img[src=x]").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src]):not([type])').length") == 0


def _png(size: int = 96) -> bytes:
    """A small gradient picture, so the screenshot shows a real photo bubble."""
    import struct
    import zlib

    rows = b"".join(
        b"\x00" + b"".join(bytes((40 + x * 2, 90 + y, 200 - x)) for x in range(size)) for y in range(size)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


_PNG = _png()


#: Each runs code that counts in `window.__ran` if the browser ever parses it as markup.
EVIL = (
    '<img src=x onerror="window.__ran=(window.__ran||0)+1">'
    "<script>window.__ran=(window.__ran||0)+1</script>"
    '<svg onload="window.__ran=(window.__ran||0)+1"></svg>'
)
#: The same for an agent's name, which must fit its 100 characters (MariaDB refuses a longer one).
EVIL_NAME = '<img src=x onerror="window.__ran=(window.__ran||0)+1">'


def _inert(page) -> None:
    assert page.evaluate("window.__ran") is None
    assert page.dialogs == []
    assert page.locator("img[src=x]").count() == 0
    assert page.locator("#transcript svg, #activity svg, #agents-table svg, #conversations svg").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([src]):not([type])').length") == 0


def test_hostile_data_arriving_live_runs_no_script_on_any_live_path(site_db, page, llm):
    """Hostile names and texts that arrive through the socket after the pages loaded, on every path
    the dashboard's JavaScript renders live: the agents table, the activity stream, a conversation's
    card with its task graph, the sandbox transcript (another person's message, the agent's reply, a
    quote, a sticker's names), the typing line and the "Replying to" line. Nothing of it runs."""
    device = _staff("sentry")
    _log_in(page, device, next_url="/dashboard/")
    expect(page.locator("#live-status")).to_have_text("live")
    agent = _agent(f"Eve {secrets.token_hex(2)} {EVIL_NAME}")  # not in the page: it comes live

    chat = page.context.new_page()
    chat.set_default_timeout(15_000)
    chat.dialogs = []
    chat.on("dialog", lambda dialog: (chat.dialogs.append(dialog.message), dialog.dismiss()))
    chat.goto("/dashboard/sandbox/")
    chat.select_option("#id_agent", label=agent.name)
    chat.fill("#id_as_name", f"Mallory {EVIL}")
    chat.fill("#id_group", f"Club {EVIL}")
    chat.click("text=Open chat")
    expect(chat.locator("#live-status")).to_have_text("live")
    chat.evaluate(
        """window.typingSeen = [];
        new MutationObserver(() => window.typingSeen.push(document.getElementById("typing").textContent))
            .observe(document.getElementById("typing"), {childList: true, characterData: true, subtree: true});"""
    )

    llm.reply_with(tasks({"kind": "send", "text": f"Agent says {EVIL}"}))
    site_db.start_gateway()
    chat.click("#mention")
    chat.type("#message-text", "what do you think?")
    chat.click("#send")
    transcript = chat.locator("#transcript")
    expect(transcript.locator(".bubble.agent")).to_contain_text(f"Agent says {EVIL}", timeout=60_000)
    assert any(f"{EVIL_NAME} is typing…" in seen for seen in chat.evaluate("window.typingSeen"))
    expect(chat.locator("#graph")).to_contain_text(f"Agent says {EVIL}", timeout=15_000)

    # Another person writes in the group while the page is open: a text quoting the agent, a sticker.
    said = sandbox_say(agent=agent, text=f"Trudy says {EVIL}", as_name=f"Trudy {EVIL}", group=f"Club {EVIL}")
    sandbox_say(
        agent=agent,
        as_name=f"Trudy {EVIL}",
        group=f"Club {EVIL}",
        reply_to=said.message_id,
        media=[
            {"media_kind": "sticker", "unique_id": "AgADevil", "sticker_name": EVIL, "sticker_set_name": EVIL}
        ],
    )
    reply = transcript.locator(".bubble", has=chat.locator(".quote"))
    expect(reply.locator(".quote")).to_have_text(f"Trudy {EVIL}: Trudy says {EVIL}")
    expect(reply.locator(".media")).to_have_text(f"sticker {EVIL} · {EVIL}")
    record_event("node_failed", agent_id=agent.pk, summary=f"error: {EVIL}")
    transcript.locator(".bubble", has_text=f"Trudy says {EVIL}").locator("text=Reply").first.click()
    expect(chat.locator("#replying-text")).to_contain_text(f"Replying to Trudy {EVIL}: Trudy says <img")

    # The dashboard got all of it live.
    expect(page.locator("#agents-table")).to_contain_text(agent.name)
    expect(page.locator("#activity")).to_contain_text(f"error: {EVIL}")
    card = page.locator("article.conversation", has_text=f"Club {EVIL}")
    expect(card).to_contain_text(f"Agent says {EVIL}")
    expect(card.locator(".title")).to_contain_text(f"Club {EVIL}")

    _inert(page)
    _inert(chat)
