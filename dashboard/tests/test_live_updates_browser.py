"""Live pages stay live while other processes write: the dashboard and the sandbox chat, open in
Chromium against a real web process, show a person's message, the agent's turn and an activity
event written by other real processes (`manage.py sandbox say`, `manage.py shell`, the gateway and
its workers) within a few seconds of their commit. Once on the embedded default (the in-memory
channel layer) and once with REDIS_URL (the Redis channel layer and broker).
"""

from __future__ import annotations

import secrets
import socket
import threading
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
from conversations.services.activity import record_event
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


class CuttableProxy:
    """A TCP forwarder from a port of its own to the web server that the test cuts (every connection
    closed, new ones refused) and restores at once: what a restart or a lost network does to an open
    page, without the seconds a real restart takes."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.listener: socket.socket | None = None
        self.connections: list[socket.socket] = []
        self.lock = threading.Lock()
        self.restore()
        self.url = f"http://127.0.0.1:{self.port}"

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self.listener = self.listener, None
        if listener is not None:
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() below
            listener.close()
        with self.lock:
            connections, self.connections = self.connections, []
        for connection in connections:
            self._close(connection)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.connections += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            self._close(source)
            self._close(sink)

    @staticmethod
    def _close(connection: socket.socket) -> None:
        try:
            connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        connection.close()


#: Counts the page's socket attempts (the page's own WebSocket, wrapped before its scripts run).
COUNT_SOCKETS = """
window.socketAttempts = 0;
const NativeWebSocket = window.WebSocket;
window.WebSocket = function (url, protocols) {
  window.socketAttempts += 1;
  return protocols === undefined ? new NativeWebSocket(url) : new NativeWebSocket(url, protocols);
};
window.WebSocket.prototype = NativeWebSocket.prototype;
"""


def _signed_in_context(chromium, site: LiveSite, *, url: str | None = None):
    user = get_user_model().objects.create(
        username=f"watcher-{secrets.token_hex(3)}", is_staff=True, is_superuser=True
    )
    device = TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)
    url = url or site.url
    context = chromium.new_context(base_url=url, viewport={"width": 1400, "height": 1000})
    context.add_cookies(
        [{"name": settings.SESSION_COOKIE_NAME, "value": site.session_for(device), "url": url}]
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


def test_a_page_that_lost_its_socket_is_live_again_within_seconds_of_the_server(site_db, chromium):
    """A restart of the web process, or a network gone for a while: the page retries with a backoff.
    Once the server answers again the page must be live within seconds, however long it waited
    (the backoff once grew to 10 s between attempts, so a row written just after the server came
    back showed up to 10 s late, and a hidden tab's throttled timers made that longer still)."""
    agent = Agent.objects.create(name=f"Rex{secrets.token_hex(2)}", phone="+15550003333", instructions="x")
    proxy = CuttableProxy(site_db.port)
    context = _signed_in_context(chromium, site_db, url=proxy.url)
    try:
        context.add_init_script(COUNT_SOCKETS)
        page = context.new_page()
        page.goto("/dashboard/")
        expect(page.locator("#live-status")).to_have_text("live")
        record_event("info", agent_id=agent.pk, summary="before the outage")
        expect(page.locator("#activity")).to_contain_text("before the outage", timeout=LIVE_MS)

        proxy.cut()
        expect(page.locator("#live-status")).to_have_text("reconnecting…")
        # Four refused attempts (about 7.5 s with the old backoff, which then waited 8 s more).
        page.wait_for_function(
            "window.socketAttempts >= 5 && document.getElementById('live-status').dataset.state === 'offline'",
            timeout=30_000,
        )
        proxy.restore()
        record_event("info", agent_id=agent.pk, summary="written once the server answered again")
        expect(page.locator("#activity")).to_contain_text(
            "written once the server answered again", timeout=LIVE_MS
        )
        expect(page.locator("#live-status")).to_have_text("live")
    finally:
        context.close()
        proxy.cut()
