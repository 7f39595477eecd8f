"""The admin and dashboard pages as an operator sees them in Chromium: values where values exist,
links instead of HTML source, a way back for a stopped agent, no broken words, no console errors.

Shares the live site of test_browser.py (same fixtures, one site per module) and the browser of
all browser tests (conftest.py).
Screenshots of each page go under artifacts/console/.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import quote

import pytest

from agents.models import Agent, AgentLease
from cindy_site.clock import now
from conversations.models import ActivityEvent, Conversation, TaskGraph, TaskNode
from dashboard.tests import test_browser as shared
from dashboard.tests.test_browser import ARTIFACTS, _agent, _log_in, _staff, expect, watched_page

pytestmark = pytest.mark.browser

# The live site and its fake LLM: one of each for this module, as in test_browser.py.
llm, site, site_db = shared.llm, shared.site, shared.site_db

SHOTS = ARTIFACTS / "console"
RAW_HTML = re.compile(r"<\s*(a|span|strong)\b|&lt;|href=")


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    """A page that records every console error and failed request: each test asserts there are none."""
    with watched_page(chromium, site, width=1400, height=1000, failed_requests=True) as page:
        yield page


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _signed_in(page, next_url: str = "/admin/") -> None:
    _log_in(page, _staff("operator"), next_url=next_url)
    expect(page.locator("#user-tools, .topbar .user").first).to_be_visible()


def _no_raw_html(page, selector: str = "#content, main") -> None:
    text = page.locator(selector).first.inner_text()
    assert not RAW_HTML.search(text), f"HTML source shown as text: {RAW_HTML.search(text).group(0)!r}"


def _conversation(agent: Agent, **fields) -> Conversation:
    return Conversation.objects.create(
        agent=agent,
        peer_id=fields.pop("peer_id", 4242),
        kind="user",
        title=fields.pop("title", "Alice"),
        last_message_at=now(),
        **fields,
    )


def test_agent_change_page_shows_the_lease_of_an_online_agent(site_db, page):
    agent = _agent(f"Leah {secrets.token_hex(2)}")
    moment = now()
    AgentLease.objects.create(
        agent=agent,
        holder="gw-host:4242:abcd",
        acquired_at=moment,
        heartbeat_at=moment,
        expires_at=moment + timedelta(minutes=10),
    )
    _signed_in(page)
    page.goto(f"/admin/agents/agent/{agent.pk}/change/")

    lease = page.locator(".field-lease_display .readonly")
    expect(lease).to_contain_text("online · held by gw-host:4242:abcd · heartbeat ")
    expect(lease).to_contain_text(
        re.compile(r"heartbeat \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · expires \d\d:\d\d:\d\d")
    )
    expect(lease.locator("a", has_text="gw-host:4242:abcd")).to_have_count(1)
    expect(page.locator(".field-related .readonly a")).to_have_count(8)
    _no_raw_html(page)
    _shot(page, "agent-change")
    assert page.problems == []


def test_conversation_see_row_shows_links_not_html_source(site_db, page):
    conversation = _conversation(_agent(f"Cora {secrets.token_hex(2)}"))
    _signed_in(page)
    page.goto(f"/admin/conversations/conversation/{conversation.pk}/change/")

    see = page.locator(".field-related .readonly")
    expect(see).to_have_text("all messages · graphs · activity · summaries · notes · events · XSend")
    expect(see.locator("a")).to_have_count(7)
    see.get_by_role("link", name="graphs").click()
    expect(page).to_have_url(re.compile(rf"/taskgraph/\?conversation__id__exact={conversation.pk}$"))
    page.go_back()
    _no_raw_html(page)
    _shot(page, "conversation-change")
    assert page.problems == []


def test_a_stopped_agent_is_restarted_from_its_change_page(site_db, page):
    agent = _agent(f"Stella {secrets.token_hex(2)}")
    Agent.objects.filter(pk=agent.pk).update(
        stopped=True, last_error="AuthKeyUnregisteredError: the session was revoked", last_error_at=now()
    )
    _signed_in(page)
    page.goto(f"/admin/agents/agent/{agent.pk}/change/")
    expect(page.locator(".field-run_state .readonly")).to_contain_text("Stopped")
    expect(page.locator(".field-last_error .readonly")).to_contain_text("AuthKeyUnregisteredError")
    _shot(page, "agent-stopped")

    page.locator("#restart-agent").click()

    expect(page.locator(".messagelist .success")).to_contain_text(f"{agent.name} restarted")
    expect(page.locator(".field-run_state .readonly")).to_have_text("Running")
    expect(page.locator(".field-last_error .readonly")).to_have_text("-")  # the admin's "empty"
    expect(page.locator("#restart-agent")).to_have_count(0)
    agent.refresh_from_db()
    assert (agent.stopped, agent.disabled, agent.last_error, agent.last_error_at) == (False, False, "", None)
    event = ActivityEvent.objects.filter(agent=agent).latest("id")
    assert "restarted by operator" in event.summary and "AuthKeyUnregisteredError" in event.summary
    _shot(page, "agent-restarted")
    assert page.problems == []


def test_the_enable_action_restarts_stopped_agents(site_db, page):
    agent = _agent(f"Sid {secrets.token_hex(2)}")
    Agent.objects.filter(pk=agent.pk).update(stopped=True)
    _signed_in(page)
    page.goto(f"/admin/agents/agent/?q={agent.name.split()[1]}")
    page.locator(f"input.action-select[value='{agent.pk}']").check()
    page.select_option("select[name=action]", "enable_agents")
    page.click("button[name=index]")
    expect(page.locator(".messagelist .success")).to_contain_text("1 agent(s) enabled or restarted")
    agent.refresh_from_db()
    assert not agent.stopped
    assert page.problems == []


def test_root_leads_to_the_dashboard_and_every_page_has_an_icon(site_db, page):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/admin/login/\?next=/dashboard/$"))
    expect(page.locator("link[rel=icon]")).to_have_count(1)
    _signed_in(page, next_url="/dashboard/")
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/dashboard/$"))
    expect(page.locator("#live-status")).to_have_text("live")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert page.request.get(icon).headers["content-type"] in {"image/x-icon", "image/vnd.microsoft.icon"}
    favicon = page.request.get("/favicon.ico")
    assert favicon.ok and favicon.body()[:4] == b"\x00\x00\x01\x00"  # an ICO file
    for path in ["/admin/", "/admin/agents/agent/", "/dashboard/sandbox/"]:
        page.goto(path)
        expect(page.locator("link[rel=icon]")).to_have_count(1)
    assert page.problems == []


def test_sandbox_page_without_a_chat_does_not_claim_to_connect(site_db, page):
    _agent(f"Sandy {secrets.token_hex(2)}")
    _signed_in(page, next_url="/dashboard/sandbox/")
    expect(page).to_have_url(re.compile(r"/dashboard/sandbox/$"))
    expect(page.locator("#live-status")).to_have_text("no chat open")
    _shot(page, "sandbox-no-chat")
    assert page.problems == []


def _single_line(page, selector: str, word: str) -> bool:
    """Whether `word`, inside the first element matching `selector`, is laid out on one line."""
    return page.evaluate(
        """([selector, word]) => {
            const root = document.querySelector(selector);
            const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
            for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                const at = node.textContent.indexOf(word);
                if (at < 0) continue;
                const range = document.createRange();
                range.setStart(node, at);
                range.setEnd(node, at + word.length);
                const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                return tops.size === 1;
            }
            throw new Error("not found: " + word);
        }""",
        [selector, word],
    )


def _line_count(page, selector: str) -> int:
    """How many lines the first element matching `selector` takes."""
    return page.evaluate(
        """(selector) => {
            const cell = document.querySelector(selector);
            const range = document.createRange();
            range.selectNodeContents(cell);
            return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
        }""",
        selector,
    )


def _failed_graph(conversation: Conversation) -> None:
    moment = now()
    graph = TaskGraph.objects.create(
        conversation=conversation, active_slot=conversation.pk, trigger="message", created=moment
    )
    TaskNode.objects.create(
        graph=graph,
        conversation=conversation,
        agent=conversation.agent,
        kind="received",
        status="failed",
        attempts=10,
        not_before=moment,
        created=moment,
        params={"text": "A long message that the agent was asked to answer, long enough to fill the details"},
        error="ImproperlyConfigured: GOOGLE_GEMINI_API_KEY is not set: add it to .env and restart the gateway",
    )


def _words_whole(page, selector: str) -> None:
    for word in ["ImproperlyConfigured:", "GOOGLE_GEMINI_API_KEY"]:
        assert _single_line(page, selector, word), f"{word} is broken across lines in {selector}"
    fits = page.evaluate(
        "(s) => { const t = document.querySelector(s).closest('table');"
        " return t.scrollWidth <= t.parentElement.clientWidth + 1; }",
        selector,
    )
    assert fits, f"the table around {selector} is wider than its box: text is cut off at its edge"


def test_task_graph_errors_wrap_between_words(site_db, page):
    agent = _agent(f"Gail {secrets.token_hex(2)}")
    conversation = _conversation(agent, title="Error wrapping")
    _failed_graph(conversation)
    page.set_viewport_size({"width": 1024, "height": 900})  # a laptop
    _signed_in(page, next_url="/dashboard/")
    card = page.locator(f"article.conversation[data-conversation-id='{conversation.pk}']")
    expect(card.locator("td.error")).to_contain_text("GOOGLE_GEMINI_API_KEY")
    _shot(page, "dashboard-graph-error")
    _words_whole(page, f"article.conversation[data-conversation-id='{conversation.pk}'] td.error")
    assert page.problems == []


def test_sandbox_task_graph_errors_wrap_between_words(site_db, page):
    from sandbox.services.chats import sandbox_chat_for, sandbox_person

    agent = _agent(f"Gwen {secrets.token_hex(2)}")
    sandbox_chat_for(agent=agent, as_name="Alice")
    _failed_graph(_conversation(agent, peer_id=sandbox_person(name="Alice").user_id))
    _signed_in(page, next_url="/dashboard/")
    page.goto(f"/dashboard/sandbox/?agent={agent.pk}&as_name=Alice")
    expect(page.locator("#live-status")).to_have_text("live")
    expect(page.locator("#graph td.error")).to_contain_text("GOOGLE_GEMINI_API_KEY")
    _shot(page, "sandbox-graph-error")
    _words_whole(page, "#graph td.error")
    assert page.problems == []


def _inside_the_list(page, selector: str) -> None:
    """The element ends inside the list's visible box: nothing is cut off at the list's edge."""
    box = page.locator(selector).first.bounding_box()
    results = page.locator(".results").bounding_box()
    assert box["x"] + box["width"] <= results["x"] + results["width"] + 1, f"{selector} is cut off"


def test_agent_list_see_links_are_compact_and_long_text_stays_inside(site_db, page):
    # Both words searched (the admin ANDs them), so that other tests' agents on the shared site never
    # match: four hex digits alone once matched eight agents' phone numbers.
    agent = _agent(f"Seeley {secrets.token_hex(4)}")
    _signed_in(page)
    page.goto(f"/admin/agents/agent/?q={quote(agent.name)}")
    expect(page.locator("td.field-related a")).to_have_count(8)
    _shot(page, "agent-list")
    assert _line_count(page, "td.field-related") <= 3  # eight links, once in four lines with six
    for index in range(8):
        assert _line_count(page, f"td.field-related a:nth-of-type({index + 1})") == 1, "a link is split"
    _inside_the_list(page, "td.field-related")

    # A long description is edited in a box that fits the list, not one cut off at its edge.
    from media_catalog.models import MediaDescription

    long_text = "A very long curated description " + " ".join(f"word{i}" for i in range(80)) + " THE-END"
    MediaDescription.objects.create(
        unique_id=f"AgADlong{secrets.token_hex(3)}", kind="photo", description=long_text, source="curated"
    )
    page.goto("/admin/media_catalog/mediadescription/?q=THE-END")
    expect(page.locator("#result_list textarea").first).to_have_value(long_text)
    _shot(page, "media-descriptions")
    _inside_the_list(page, "#result_list textarea")
    assert page.problems == []


def test_stickers_list_shows_the_pictures_their_descriptions_have(site_db, page):
    """A set known only through the sandbox has no sticker files; the curated descriptions have them."""
    import shutil

    from django.conf import settings

    from media_catalog.models import MediaDescription, Sticker, StickerSet

    stored = site_db.workdir / "media" / "media_catalog"
    stored.mkdir(parents=True, exist_ok=True)
    set_name = f"BrambleGnome{secrets.token_hex(2)}"
    sticker_set = StickerSet.objects.create(short_name=set_name, title="Bramble the Gnome")
    for position, (unique_id, emoji) in enumerate([("AgADBrGnWave01", "👋"), ("AgADBrGnShroom2", "🍄")]):
        own_id = f"{unique_id}{secrets.token_hex(2)}"
        shutil.copyfile(
            settings.BASE_DIR / "samples" / "media" / f"{unique_id}.png", stored / f"{own_id}.png"
        )
        MediaDescription.objects.create(
            unique_id=own_id,
            kind="sticker",
            sticker_set_name=set_name,
            sticker_name=emoji,
            description=f"the gnome {emoji}",
            source="curated",
            status="curated",
            mime="image/png",
            file=f"media_catalog/{own_id}.png",
        )
        Sticker.objects.create(sticker_set=sticker_set, name=emoji, unique_id=own_id, position=position)
    _signed_in(page)
    page.goto(f"/admin/media_catalog/sticker/?sticker_set__id__exact={sticker_set.pk}")

    previews = page.locator("td.field-preview img")
    expect(previews).to_have_count(2)
    for index in range(2):
        expect(previews.nth(index)).to_have_js_property("complete", True)
        assert previews.nth(index).evaluate("img => img.naturalWidth") == 256
    expect(page.locator("td.field-preview", has_text="no file")).to_have_count(0)
    _shot(page, "stickers")
    page.goto(f"/admin/media_catalog/mediadescription/?set={set_name}")
    expect(page.locator("td.field-preview img")).to_have_count(2)
    _shot(page, "media-descriptions-pictures")
    assert page.problems == []


def test_agent_form_picks_role_prompts_and_sticker_sets_from_real_choices(site_db, page):
    from agents.models import RolePrompt
    from media_catalog.models import MediaDescription

    tag = secrets.token_hex(2)
    chatbot, think, roleplay = f"Chatbot{tag}", f"Think{tag}", f"Roleplay{tag}"
    agent = _agent(f"Pia {tag}", role_prompt_names=[think, chatbot], explicit_stickers=["Old::one"])
    for name in (chatbot, think, roleplay):
        RolePrompt.objects.create(name=name, text=f"global {name}")
    RolePrompt.objects.create(name=chatbot, text="her own", agent=agent)
    MediaDescription.objects.create(
        unique_id=f"AgADpick{tag}",
        kind="sticker",
        sticker_set_name=f"Gnomes{tag}",
        sticker_set_title="Gnomes",
    )
    _signed_in(page)
    page.goto(f"/admin/agents/agent/{agent.pk}/change/")

    expect(page.locator("label[for=id_llm]")).to_have_text("LLM:")
    prompts = page.locator("#id_role_prompt_names")
    expect(prompts.get_by_label(f"{think} (global)")).to_be_checked()
    expect(prompts.get_by_label(f"{chatbot} (own)")).to_be_checked()
    expect(prompts.get_by_label(f"{roleplay} (global)")).not_to_be_checked()
    expect(page.locator("#id_explicit_stickers")).to_have_value("Old::one")
    persona = page.locator("fieldset", has_text="Persona").first.inner_text()
    assert '["' not in persona and "[]" not in persona, "a list is shown as JSON"
    _shot(page, "agent-form")

    prompts.get_by_label(f"{roleplay} (global)").check()
    page.locator("#id_sticker_set_names").get_by_label(f"Gnomes{tag} · Gnomes").check()
    page.fill("#id_explicit_stickers", f"Gnomes{tag}::wave\nnot a sticker")
    page.click("input[name=_continue]")
    expect(page.locator(".errorlist")).to_contain_text(
        'line 2, "not a sticker": write each sticker as SET::NAME'
    )
    page.fill("#id_explicit_stickers", f"Gnomes{tag}::wave")
    page.click("input[name=_continue]")

    expect(page.locator(".messagelist .success")).to_be_visible()
    agent.refresh_from_db()
    assert agent.role_prompt_names == [think, chatbot, roleplay]
    assert agent.sticker_set_names == [f"Gnomes{tag}"]
    assert agent.explicit_stickers == [f"Gnomes{tag}::wave"]
    assert page.problems == []
