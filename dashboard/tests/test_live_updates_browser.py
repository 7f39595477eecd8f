"""Live pages stay live while other processes write: the dashboard and the sandbox chat, open in
Chromium against a real web process, show a person's message, the agent's turn and an activity
event written by other real processes (`manage.py sandbox say`, `manage.py shell`, the gateway and
its workers) within a few seconds of their commit. Once on the embedded default (the in-memory
channel layer) and once with REDIS_URL (the Redis channel layer and broker).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest
import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent
from cindy_site.testing.fake_llm import FakeLLMServer
from conversations.models import ActivityEvent, Conversation, TaskNode
from dashboard.tests.live_site import LiveSite
from sandbox.models import SandboxMessage

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

#: How soon after its commit a row written elsewhere must show on an open page (ms).
LIVE_MS = 5_000
#: How long a turn on the gateway and its workers may take (the fake LLM answers at once).
TURN_SECONDS = 90
#: A Redis database of its own, so that no other run's task workers take this site's tasks.
REDIS_URL = "redis://127.0.0.1:6379/11"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        server.set_default_reply('[{"kind": "send", "text": "a default reply"}]')
        yield server


@pytest.fixture(scope="module", params=["in-memory", "redis"])
def site(request, llm, site_template, tmp_path_factory, django_db_blocker) -> Iterator[LiveSite]:
    """The web process, and the gateway with its task workers, on one channel layer."""
    if request.param == "redis":
        try:
            redis.Redis.from_url(REDIS_URL, socket_timeout=2).ping()
        except redis.RedisError:
            pytest.skip(f"no Redis answers at {REDIS_URL} (./test.sh starts one)")
        redis.Redis.from_url(REDIS_URL).flushdb()
    with django_db_blocker.unblock():
        live = LiveSite(
            tmp_path_factory.mktemp(f"live-{request.param}"), llm_url=llm.url, template=site_template
        )
        live.env.pop("REDIS_URL", None)
        if request.param == "redis":
            live.env["REDIS_URL"] = REDIS_URL
        try:
            live.start()
            live.start_gateway()
            yield live
        finally:
            live.stop()
            if request.param == "redis":
                redis.Redis.from_url(REDIS_URL).flushdb()  # the groups a stopped server leaves


@pytest.fixture
def site_db(chromium, site, django_db_blocker, monkeypatch) -> Iterator[LiveSite]:
    """The test reads (and sets up) the site's database; see test_browser.site_db."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with django_db_blocker.unblock(), site.connected():
        yield site


def _until(predicate, what: str, site: LiveSite, seconds: float = TURN_SECONDS):
    """Wait for another process to commit something (read from the database, a tenth of a second
    apart: nothing signals this process when the gateway writes)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; gateway log:\n{site.log('gateway')}")


def _signed_in_context(chromium, site: LiveSite):
    user = get_user_model().objects.create(
        username=f"watcher-{secrets.token_hex(3)}", is_staff=True, is_superuser=True
    )
    device = TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)
    context = chromium.new_context(base_url=site.url, viewport={"width": 1400, "height": 1000})
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": site.session_for(device), "url": site.url}]
    )
    context.set_default_timeout(15_000)
    return context


def test_open_pages_show_what_other_processes_write_within_seconds(site_db, chromium, llm):
    name = f"Liv{secrets.token_hex(2)}"
    agent = Agent.objects.create(
        name=name,
        phone="+15550002222",
        instructions="Be brief.",
        transport="sandbox",
        llm="gemini",
        start_typing_delay=1,
        typing_speed=1000,
    )
    context = _signed_in_context(chromium, site_db)
    try:
        dashboard = context.new_page()
        dashboard.goto("/dashboard/")
        expect(dashboard.locator("#live-status")).to_have_text("live")
        chat = context.new_page()
        chat.goto("/dashboard/sandbox/")
        chat.select_option("#id_agent", label=name)
        chat.fill("#id_as_name", "Alice")
        chat.click("text=Open chat")
        expect(chat.locator("#live-status")).to_have_text("live")
        transcript = chat.locator("#transcript")

        # A person's message, written by a process of its own: in the chat as soon as it is stored,
        # and on the dashboard as soon as the gateway has taken it in.
        llm.reply_with(f'[{{"kind": "send", "text": "first answer of {name}"}}]')
        site_db.command("sandbox", "say", name, "hello from a shell", "--as", "Alice")
        expect(transcript.locator(".bubble", has_text="hello from a shell")).to_have_count(1, timeout=LIVE_MS)
        _until(
            lambda: ActivityEvent.objects.filter(kind="message_in", agent=agent).exists(),
            "the gateway's message_in event",
            site_db,
        )
        expect(dashboard.locator("#activity")).to_contain_text("hello from a shell", timeout=LIVE_MS)

        # The turn the gateway and its workers ran: the reply and the finished graph on both pages,
        # the reply in the dashboard's activity.
        reply = f"first answer of {name}"
        _until(
            lambda: SandboxMessage.objects.filter(text=reply).exists()
            and not TaskNode.objects.filter(agent=agent).exclude(status="done").exists()
            and ActivityEvent.objects.filter(kind="message_out", agent=agent).exists(),
            "the agent's reply",
            site_db,
        )
        expect(transcript.locator(".bubble.agent", has_text=reply)).to_have_count(1, timeout=LIVE_MS)
        expect(chat.locator("#graph tr.node.status-done")).to_have_count(2, timeout=LIVE_MS)
        card = dashboard.locator("article.conversation", has_text=name)
        expect(card.locator("tr.node.status-done")).to_have_count(2, timeout=LIVE_MS)
        expect(dashboard.locator("#activity")).to_contain_text(reply, timeout=LIVE_MS)

        # An activity event about the conversation from another process: on both pages.
        conversation = Conversation.objects.get(agent=agent)
        site_db.command(
            "shell",
            "-c",
            "from conversations.services.activity import record_event; "
            f"record_event('info', agent_id={agent.pk}, conversation_id={conversation.pk}, "
            "summary='written by another process')",
        )
        expect(dashboard.locator("#activity")).to_contain_text("written by another process", timeout=LIVE_MS)
        expect(chat.locator("#activity")).to_contain_text("written by another process", timeout=LIVE_MS)

        # And a second round on the same open pages: nothing stops after the first.
        second = f"second answer of {name}"
        llm.reply_with(f'[{{"kind": "send", "text": "{second}"}}]')
        site_db.command("sandbox", "say", name, "are you still there?", "--as", "Alice")
        expect(transcript.locator(".bubble", has_text="are you still there?")).to_have_count(
            1, timeout=LIVE_MS
        )
        _until(lambda: SandboxMessage.objects.filter(text=second).exists(), "the second reply", site_db)
        expect(transcript.locator(".bubble.agent", has_text=second)).to_have_count(1, timeout=LIVE_MS)
        _until(
            lambda: ActivityEvent.objects.filter(
                kind="message_out", agent=agent, summary__contains=second
            ).exists(),
            "the second message_out event",
            site_db,
        )
        expect(dashboard.locator("#activity")).to_contain_text(second, timeout=LIVE_MS)
    finally:
        context.close()
