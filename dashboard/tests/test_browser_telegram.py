"""The Telegram console pages in Chromium, against a live site: sign-in from the web, the account
page (profile, photos, contacts, joining), and mutes and leaves from the conversation admin.

The sandbox features run through a real gateway process (`runagents`). The sign-in runs first and
alone: its gateway step is called here, with the login client double at the network edge, because
the sandbox has no sign-in. Screenshots of each page are saved under artifacts/.
"""

# ruff: noqa: F811  (the browser fixtures are imported from test_browser by name)
from __future__ import annotations

import io
import re
import secrets
import threading

import pytest
from asgiref.sync import async_to_sync
from PIL import Image

from agents.models import Agent, GatewayRequest
from agents.selectors import telegram_request_waiting
from agents.telegram_pages import ACCOUNT_PAGE_KINDS
from conversations.models import Conversation
from dashboard.tests.test_browser import (  # noqa: F401
    ARTIFACTS,
    _agent,
    _log_in,
    _staff,
    expect,
    llm,
    page,
    site,
    site_db,
)
from engine import signin
from engine.gateway import Gateway
from engine.tests.processes import wait_for
from engine.tests.test_signin import CODE, PASSWORD, LoginClient
from sandbox.models import SandboxChat, SandboxMember, SandboxUser
from sandbox.services.chats import sandbox_group, sandbox_person, sandbox_say, sandbox_user_for_agent

pytestmark = pytest.mark.browser


#: Chromium asks every site for it; the site's own favicon is not part of these pages.
NOT_OURS = ("/favicon.ico",)


def _console_error(problems: list[str], msg) -> None:
    # A failed load is reported by URL below (the console message does not name it).
    if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
        problems.append(msg.text)


def _failed_load(problems: list[str], response) -> None:
    if response.status >= 400 and not response.url.endswith(NOT_OURS):
        problems.append(f"{response.status} {response.url}")


@pytest.fixture
def watched(page):
    """The page, with every console error, failed load and uncaught exception collected."""
    problems: list[str] = []
    page.on("console", lambda msg: _console_error(problems, msg))
    page.on("response", lambda response: _failed_load(problems, response))
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.problems = problems
    return page


def assert_reads_well(page, scope: str = "#content") -> None:
    """What a person sees (in `scope`): no markup as text, no "-" standing in for a value, no
    console errors."""
    text = "\n".join(page.locator(scope).all_inner_texts())
    assert "<a " not in text and "&lt;" not in text and "&amp;" not in text, text
    assert not re.search(r"^\s*-\s*$", text, re.M), text
    assert page.problems == []


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def submit(page, button) -> None:
    """Click a button that posts its form, and return once the page the post answers with has loaded
    (so a reload that follows never races the form's own navigation)."""
    with page.expect_navigation(wait_until="load"):
        button.click()


def served(page, agent: Agent) -> None:
    """Reload the account page once the gateway has served its requests. (While one waits the
    page refreshes itself every few seconds, as the first step of the account test relies on.)"""
    wait_for(
        lambda: not telegram_request_waiting(agent=agent, kinds=ACCOUNT_PAGE_KINDS),
        "the gateway to serve the account page's requests",
        page.site.logs / "gateway.log",
    )
    page.reload()


def gateway_signin_step(site, name: str) -> None:
    """One pass of the gateway's sign-in step, on a thread of its own (Playwright's loop runs here)."""
    errors: list[BaseException] = []

    def step() -> None:
        try:
            with site.connected():
                gateway = Gateway(names=[name], gateway_id="browser-signin", isolated_heartbeat=False)
                async_to_sync(gateway.steps["signin"].run)()
        except BaseException as exc:  # reported in the test's thread
            errors.append(exc)

    thread = threading.Thread(target=step)
    thread.start()
    thread.join(60)
    assert not errors, errors


def test_an_operator_signs_a_telegram_account_in_from_the_web(site_db, watched, settings, monkeypatch):
    page = watched
    settings.TELEGRAM_API_ID = "12345"
    settings.TELEGRAM_API_HASH = "0123456789abcdef0123456789abcdef"
    settings.CINDY_SESSION_KEY = "browser-test-session-key"
    account = {"signed_in": False, "two_step": True, "codes_sent_to": [], "disconnects": 0}
    monkeypatch.setattr(signin, "make_login_client", lambda session: LoginClient(session, account))
    name = f"Tess {secrets.token_hex(2)}"
    agent = _agent(name, stopped=True, last_error="not logged in to Telegram")
    Agent.objects.filter(pk=agent.pk).update(transport="telegram")
    try:
        _log_in(page, _staff("signer"), next_url=f"/admin/agents/agent/{agent.pk}/change/")
        page.get_by_role("link", name="Telegram sign-in").click()
        expect(page.locator("#signin-state")).to_have_text("Start by asking Telegram for a code.")
        assert_reads_well(page)
        shot(page, "telegram-signin-start.png")

        page.get_by_role("button", name="Send a code").click()
        expect(page.locator(".cindy-waiting")).to_contain_text("Waiting for the gateway")
        gateway_signin_step(site_db, name)
        page.reload()
        expect(page.locator("#signin-state")).to_have_text("Telegram sent a code (App). Type it here:")

        page.fill("#id_code-code", CODE)
        page.locator("#code-form").get_by_role("button", name="Sign in").click()
        gateway_signin_step(site_db, name)
        page.reload()
        expect(page.locator("#signin-state")).to_contain_text("Password hint: the usual.")
        assert_reads_well(page)
        shot(page, "telegram-signin-password.png")

        page.fill("#id_password-password", "not it")
        page.locator("#password-form").get_by_role("button", name="Sign in").click()
        gateway_signin_step(site_db, name)
        page.reload()
        expect(page.locator("tr.cindy-failed").first).to_contain_text(
            "Request failed: the two-step verification password is wrong: try again"
        )
        page.fill("#id_password-password", PASSWORD)
        page.locator("#password-form").get_by_role("button", name="Sign in").click()
        gateway_signin_step(site_db, name)
        page.reload()
        expect(page.locator("#signin-state")).to_contain_text("Signed in as @heidi_tg.")
        expect(page.locator("#account")).to_have_text("@heidi_tg · user id 4242")
        assert CODE not in page.content() and PASSWORD not in page.content()
        assert_reads_well(page)
        shot(page, "telegram-signin-done.png")
        agent.refresh_from_db()
        assert not agent.stopped
        assert not GatewayRequest.objects.filter(agent=agent, params__password=PASSWORD).exists()
    finally:
        # The live gateway of the next tests must not try this account on the real Telegram.
        Agent.objects.filter(pk=agent.pk).update(disabled=True)


def _png() -> bytes:
    buffer = io.BytesIO()
    image = Image.new("RGB", (160, 160), (250, 200, 120))
    for x in range(40, 120):
        for y in range(40, 120):
            if (x - 80) ** 2 + (y - 80) ** 2 < 1600:
                image.putpixel((x, y), (90, 60, 160))
    image.save(buffer, "PNG")
    return buffer.getvalue()


def test_the_account_page_reads_and_changes_the_profile_photos_contacts_and_joins(site_db, watched):
    page = watched
    agent = _agent(f"Pia {secrets.token_hex(2)}")
    suffix = secrets.token_hex(2)
    bob = sandbox_person(name=f"Bob {suffix}")
    SandboxUser.objects.filter(pk=bob.pk).update(username=f"bob_{suffix}")
    club = sandbox_group(title="Chess club", members=[bob])
    SandboxChat.objects.filter(pk=club.pk).update(username=f"chess_{suffix}")
    site_db.start_gateway()

    _log_in(page, _staff("curator"), next_url=f"/admin/agents/agent/{agent.pk}/change/")
    page.get_by_role("link", name="Telegram account").click()
    expect(page.locator("#read-at")).to_have_text("Not read yet.")
    page.get_by_role("button", name="Read from the sandbox").click()
    expect(page.locator("#gateway-state")).to_have_text("online", timeout=30_000)
    expect(page.locator("#profile")).to_contain_text("user id", timeout=30_000)

    page.fill("#id_profile-first_name", "Pia")
    page.fill("#id_profile-last_name", "Lindqvist")
    page.fill("#id_profile-username", f"pia_{suffix}")
    page.fill("#id_profile-about", "Plays chess on Sundays & tells tales")
    submit(page, page.get_by_role("button", name="Save the profile in the sandbox"))
    served(page, agent)
    expect(page.locator("#profile-bio")).to_have_text("Plays chess on Sundays & tells tales", timeout=30_000)
    expect(page.locator("#profile")).to_contain_text(f"Pia Lindqvist · @pia_{suffix}")

    page.set_input_files(
        "#id_photo-photo", files=[{"name": "pia.png", "mimeType": "image/png", "buffer": _png()}]
    )
    submit(page, page.get_by_role("button", name="Add the photo"))
    served(page, agent)
    photo = page.locator("#photos img")
    expect(photo).to_have_count(1, timeout=30_000)
    assert photo.evaluate("img => img.complete && img.naturalWidth") == 160

    page.fill("#id_contact-target", f"@bob_{suffix}")
    page.fill("#id_contact-first_name", "Bob")
    submit(page, page.get_by_role("button", name="Add the contact"))
    served(page, agent)
    expect(page.locator("#contacts tbody")).to_contain_text(f"@bob_{suffix}", timeout=30_000)

    page.fill("#id_join-target", f"https://t.me/chess_{suffix}")
    page.get_by_role("button", name="Join").click()
    page.fill("#id_join-target", "@no_such_group_here")
    submit(page, page.get_by_role("button", name="Join"))
    served(page, agent)
    requests = page.locator(".cindy-requests")
    expect(requests).to_contain_text(f"Join https://t.me/chess_{suffix}", timeout=30_000)
    expect(requests.locator("tr.cindy-failed")).to_contain_text(
        "Request failed: Telegram refused: USERNAME_NOT_OCCUPIED", timeout=30_000
    )
    expect(page.locator(".cindy-waiting")).to_have_count(0, timeout=30_000)
    assert SandboxMember.objects.filter(chat=club, user=sandbox_user_for_agent(agent=agent)).exists()
    assert_reads_well(page)
    shot(page, "telegram-account.png")

    page.locator(f"#contacts input[aria-label='Select Bob {suffix}']").check()
    submit(page, page.get_by_role("button", name="Delete the selected contacts"))
    served(page, agent)
    expect(page.locator("#contacts tbody")).to_contain_text("No contacts.", timeout=30_000)
    submit(page, page.locator("#photos").get_by_role("button", name="Delete"))
    served(page, agent)
    expect(page.locator("#photos")).to_contain_text("No profile photos.", timeout=30_000)
    assert_reads_well(page)


def test_a_mute_set_in_the_admin_sticks_and_a_group_is_left(site_db, watched):
    page = watched
    agent = _agent(f"Mila {secrets.token_hex(2)}")
    sandbox_say(agent=agent, text="hello", as_name="Ann")
    # A message, so the group reaches the mirror whenever the running gateway picks the agent up.
    circle = f"Knitting circle {secrets.token_hex(2)}"
    group = sandbox_say(agent=agent, text="welcome, all", as_name="Bea", group=circle).chat
    site_db.start_gateway()
    me = sandbox_user_for_agent(agent=agent)
    ann = SandboxUser.objects.get(name="Ann")

    # The list is read once: the gateway (a process starting now) must have mirrored both chats.
    wait_for(
        lambda: Conversation.objects.filter(agent=agent, title__in=["Ann", circle]).count() == 2,
        "the gateway to mirror the chat with Ann and the group",
        site_db.logs / "gateway.log",
    )
    _log_in(page, _staff("muter"), next_url="/admin/")
    page.goto(f"/admin/conversations/conversation/?agent__id__exact={agent.pk}")
    expect(page.locator("#result_list")).to_contain_text("Ann")
    dm = Conversation.objects.get(agent=agent, peer_id=ann.user_id)
    page.goto(f"/admin/conversations/conversation/{dm.pk}/change/")
    page.check("#id_muted")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("Chat muted here")
    requests = page.locator(".field-telegram_requests")
    # The gateway's pass; the admin page does not refresh itself.
    wait_for(
        lambda: not telegram_request_waiting(agent=agent, kinds=ACCOUNT_PAGE_KINDS),
        "the gateway to mute the chat",
        site_db.logs / "gateway.log",
    )
    page.reload()
    expect(requests).to_contain_text(f"Mute chat {ann.user_id} · Done")
    assert SandboxMember.objects.get(chat__kind="dm", chat__members=ann, user=me).muted
    expect(page.locator("#id_muted")).to_be_checked()
    # The rows this feature adds (the rest of the page belongs to the conversation admin).
    assert_reads_well(page, ".field-telegram_requests, .field-muted")
    shot(page, "conversation-mute.png")

    page.goto(f"/admin/conversations/conversation/?agent__id__exact={agent.pk}")
    row = page.locator("#result_list tr", has_text=circle)
    expect(row).to_have_count(1)
    row.locator("input.action-select").check()
    page.select_option("select[name=action]", "leave_in_telegram")
    page.get_by_role("button", name="Go").click()
    expect(page.locator(".messagelist")).to_contain_text("Asked the gateway to leave 1 chat(s).")
    shot(page, "conversation-leave.png")
    wait_for(
        lambda: not SandboxMember.objects.filter(chat=group, user=me).exists(),
        "the gateway to leave the group",
        site_db.logs / "gateway.log",
    )
    assert not SandboxMember.objects.filter(chat=group, user=me).exists()
    dm.refresh_from_db()
    assert dm.muted  # minutes of dialog refreshes later, still muted
