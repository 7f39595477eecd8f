"""The console pages in Chromium, against the sandbox transport and the fake LLM: a conversation's
controls and pending work, the task log with a translation, the print view and downloads, Users,
the cost chart, and the admin's LLMs and prices page with OpenRouter's list.

Each walk asserts what a person sees (no raw markup, no placeholder where a value exists) and that
the page logged no console errors. Screenshots go to artifacts/console-*.png.
"""

# The module shares test_browser.py's fixtures by importing them, which ruff reads as redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Iterator
from decimal import Decimal

import pytest

from cindy_site.clock import now
from cindy_site.testing.fake_llm import FakeLLMServer
from conversations.models import Conversation, Message, NodeStatus, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from dashboard.tests.conftest import HOSTILE
from dashboard.tests.live_site import LiveSite
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures shared with the dashboard walk
    _PNG,
    ARTIFACTS,
    _agent,
    _log_in,
    _staff,
    site_db,
    tasks,
)
from engine.tests.processes import wait_for
from llm.models import LLMCall, OfferedModel
from memory.models import Memory
from sandbox.services.chats import sandbox_say

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

OPENROUTER_MODELS = [
    {
        "id": "anthropic/claude-sonnet-4",
        "name": "Anthropic: Claude Sonnet 4",
        "context_length": 200000,
        "pricing": {"prompt": "0.000003", "completion": "0.000015"},
    },
    {
        "id": "meta-llama/llama-3.3-70b-instruct",
        "name": "Meta: Llama 3.3 70B Instruct",
        "context_length": 131072,
        "pricing": {"prompt": "0.00000013", "completion": "0.0000004"},
    },
]


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        server.set_default_reply(tasks())
        server.models = OPENROUTER_MODELS
        yield server


@pytest.fixture(scope="module")
def site(llm, site_template, tmp_path_factory, django_db_blocker) -> Iterator[LiveSite]:
    with django_db_blocker.unblock():
        live = LiveSite(tmp_path_factory.mktemp("console"), llm_url=llm.url, template=site_template)
        live.env.update({"OPENROUTER_API_KEY": "test", "OPENROUTER_BASE_URL": llm.url + "/api/v1"})
        try:
            yield live.start()
        finally:
            live.stop()


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    context = chromium.new_context(
        base_url=site.url, viewport={"width": 1400, "height": 1000}, accept_downloads=True
    )
    page = context.new_page()
    page.site = site
    page.set_default_timeout(15_000)
    page.console_errors = []
    page.on(
        "console",
        lambda message: message.type == "error"
        and not (message.location or {}).get("url", "").endswith("/favicon.ico")
        and page.console_errors.append(message.text),
    )
    page.on("pageerror", lambda error: page.console_errors.append(str(error)))
    page.on(
        "dialog", lambda dialog: (page.console_errors.append(f"dialog: {dialog.message}"), dialog.dismiss())
    )
    try:
        yield page
    finally:
        context.close()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"console-{name}.png"), full_page=True)


def _assert_clean(page) -> None:
    """Nothing raw, nothing injected, and no console errors."""
    body = page.locator("body").inner_text()
    assert "<script" not in body.replace(HOSTILE, "") and "&lt;" not in body and "&amp;" not in body
    assert page.locator("img[src=x]").count() == 0
    assert page.console_errors == []


def _planned(agent, title: str, sends: list[str]) -> Conversation:
    chat = Conversation.objects.create(
        agent=agent, peer_id=5000 + secrets.randbelow(10**6), kind="dm", title=title, last_message_at=now()
    )
    Message.objects.create(conversation=chat, message_id=1, sender_id=chat.peer_id, sender_name=title,
                           date=now(), text="Can you send me the recipe?")  # fmt: skip
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=1)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE, finished=now())
    graph_append_chain(after=received, tasks=[("send", {"text": text}) for text in sends])
    return chat


def test_an_operator_gags_sets_the_llm_and_cancels_pending_work(site_db, page):
    # A disabled agent: its nodes stay pending whatever else the site runs.
    agent = _agent(f"Greta {secrets.token_hex(2)}", disabled=True)
    chat = _planned(agent, "Alice", ["First, flour.", "Then water.", "Bake for 40 minutes."])
    _planned(agent, "Bob", ["Hello Bob"])
    _log_in(page, _staff("controller"), next_url=f"/dashboard/conversations/{chat.pk}/")

    work = page.locator("#work")
    expect(work.locator("tbody tr")).to_have_count(3)
    expect(work).to_contain_text("Then water.")
    _shot(page, "conversation")

    work.locator("tr", has_text="Then water.").get_by_role("button", name="Cancel").click()
    expect(page.locator(".notice")).to_contain_text("cancelled.")
    expect(work.locator("tbody tr")).to_have_count(2)

    page.fill("#llm-model", "llama-opus")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".notice.error")).to_contain_text('LLM "llama-opus" is not a known name')
    page.fill("#llm-model", "grok")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#llm-effective")).to_have_text(
        "uses grok/grok-4-fast-non-reasoning (from this conversation)"
    )
    expect(page.locator("#llm-model")).to_have_value("grok")

    page.click("#gag")
    expect(page.locator(".conv-title .badge.bad")).to_have_text("gagged")
    expect(page.locator("#gag")).to_have_text("Ungag")

    page.click("#cancel-graph")
    expect(work).to_contain_text("Nothing pending in this conversation.")
    page.click("#cancel-agent-work")
    expect(page.locator(".notice")).to_contain_text(
        f"All pending work of {agent.name} cancelled: 1 graph(s)."
    )
    assert not TaskNode.objects.filter(agent=agent, status="pending").exists()
    _assert_clean(page)


def test_the_task_log_shows_thoughts_and_memories_and_translates(site_db, page, llm, tmp_path):
    agent = _agent(f"Dora {secrets.token_hex(2)}")
    llm.reply_with(
        tasks(
            {"kind": "think", "text": "She greets me in French; answer in French."},
            {"kind": "remember", "content": "Alice writes in French."},
            {"kind": "send", "text": "Très bien, merci ! Et toi ?"},
        )
    )
    site_db.start_gateway()
    sandbox_say(agent=agent, text="Bonjour Dora, tu vas bien ?", as_name="Alice")
    _log_in(page, _staff("reader"), next_url="/dashboard/")
    expect(page.locator("#activity")).to_contain_text("Très bien, merci", timeout=60_000)
    chat = Conversation.objects.get(agent=agent)
    expect(page.locator("#activity")).to_contain_text("send", timeout=15_000)

    page.goto(f"/dashboard/conversations/{chat.pk}/log/")
    log = page.locator("#log")
    expect(log.locator(".line-think")).to_have_text("think She greets me in French; answer in French.")
    expect(log.locator(".line-remember")).to_have_text("remember Alice writes in French.")
    expect(log.locator(".log-task.kind-send")).to_contain_text("Très bien, merci ! Et toi ?")
    texts = log.locator("li.log-message, li.log-task").all_inner_texts()
    assert [i for i, t in enumerate(texts) if "Bonjour Dora" in t] < [
        i for i, t in enumerate(texts) if "She greets me" in t
    ]

    # Newest text first: the agent's reply is item 0, Alice's message item 1.
    llm.reply_with(json.dumps({"translations": [
        {"id": "0", "text": "Very well, thanks! And you?"},
        {"id": "1", "text": "Hello Dora, are you well?"},
    ]}))  # fmt: skip
    page.select_option("#language", "English")
    page.click("#translate")
    expect(page.locator(".translation", has_text="Hello Dora, are you well?")).to_be_visible(timeout=60_000)
    expect(page.locator(".translation", has_text="Very well, thanks! And you?")).to_be_visible()
    expect(page.locator("#translation-status")).to_have_text("Shown with their English translation.")
    assert LLMCall.objects.filter(conversation=chat, purpose="translate").count() == 1
    _shot(page, "task-log")
    _assert_clean(page)

    page.goto(f"/dashboard/conversations/{chat.pk}/print/")
    expect(page.locator("h1")).to_have_text(f"{agent.name} ↔ Alice")
    expect(page.locator(".task .line-think")).to_contain_text("She greets me in French")
    _shot(page, "print")
    _assert_clean(page)

    # A photo in the media store goes into the downloads as a data: URI.
    photo = site_db.workdir / "media" / "photos" / "bread.png"
    photo.parent.mkdir(parents=True, exist_ok=True)
    photo.write_bytes(_PNG)
    Message.objects.create(conversation=chat, message_id=100, sender_id=chat.peer_id, sender_name="Alice",
                           date=now(), text="Regarde mon pain !",
                           media=[{"media_kind": "photo", "unique_id": "AgBread", "file": "photos/bread.png"}])  # fmt: skip
    page.goto(f"/dashboard/conversations/{chat.pk}/")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download Markdown").click()
    markdown = download_info.value
    assert markdown.suggested_filename.endswith(f"-{chat.pk}.md")
    assert "Bonjour Dora, tu vas bien ?" in open(markdown.path(), encoding="utf-8").read()
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download HTML").click()
    html_file = tmp_path / download_info.value.suggested_filename
    download_info.value.save_as(html_file)
    assert html_file.suffix == ".html"
    page.goto(html_file.as_uri())
    expect(page.locator("li.message.agent")).to_contain_text("Très bien, merci ! Et toi ?")
    image = page.locator("li.message img")
    expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
    assert image.evaluate("img => img.complete && img.naturalWidth") == 96
    _shot(page, "download")
    assert page.console_errors == []


def test_users_show_counts_costs_and_memories_across_agents(site_db, page):
    wendy, heidi = _agent(f"Wendy {secrets.token_hex(2)}"), _agent(f"Heidi {secrets.token_hex(2)}")
    peer = 800_000 + secrets.randbelow(10**5)
    for agent, cost in ((wendy, "0.0123"), (heidi, "0.0040")):
        chat = Conversation.objects.create(agent=agent, peer_id=peer, kind="dm", title="Alice Martin",
                                           username="alicem", last_message_at=now())  # fmt: skip
        for n, is_agent in enumerate((False, True, False), start=1):
            Message.objects.create(conversation=chat, message_id=n, is_agent=is_agent, date=now(), text="hi")
        LLMCall.objects.create(created=now(), agent=agent, conversation=chat, provider="gemini", model="m",
                               cost=Decimal(cost))  # fmt: skip
    Memory.objects.create(
        agent=wendy, kind="curated", partner_id=peer, content="Alice bakes sourdough on Sundays."
    )
    _log_in(page, _staff("people"), next_url="/dashboard/users/")

    row = page.locator(f"#users-table tr[data-peer-id='{peer}']")
    expect(row).to_contain_text("Alice Martin")
    expect(row).to_contain_text("@alicem")
    expect(row.locator("td.num").nth(1)).to_have_text("4")
    expect(row.locator("td.num").nth(2)).to_have_text("2")
    expect(row.locator("td.num").nth(3)).to_have_text("0.0163")
    assert "-" not in [t.strip() for t in row.locator("td").all_inner_texts()]
    _shot(page, "users")

    row.get_by_role("link", name="Alice Martin").click()
    expect(page.locator(".page-title")).to_have_text("Alice Martin")
    wendy_panel = page.locator(f".partner-agent[data-agent='{wendy.name}']")
    expect(wendy_panel).to_contain_text("Alice bakes sourdough on Sundays.")
    expect(wendy_panel).to_contain_text("2 in, 1 out")
    expect(page.locator(f".partner-agent[data-agent='{heidi.name}']")).to_contain_text("None.")
    _shot(page, "user")
    _assert_clean(page)


def test_the_dashboard_draws_costs_per_agent_and_day(site_db, page):
    agents = [_agent(f"{name} {secrets.token_hex(2)}") for name in ("Ava", "Bea", "Cleo")]
    for day in range(14):
        for n, agent in enumerate(agents):
            cost = Decimal("0.002") * (n + 1) * (1 + (day * 7 + n * 3) % 5)
            LLMCall.objects.create(created=now() - dt.timedelta(days=day), agent=agent, provider="gemini",
                                   model="m", cost=cost)  # fmt: skip
    _log_in(page, _staff("accountant"), next_url="/dashboard/")

    chart = page.locator("#costs-panel")
    for agent in agents:  # one bar segment per day and agent, named in its tooltip and the legend
        expect(chart.locator("#cost-chart rect", has_text=agent.name)).to_have_count(14)
        expect(chart.locator("#cost-legend")).to_contain_text(agent.name)
    assert re.search(r"\$\d+\.\d{4} in all", chart.inner_text())
    chart.screenshot(path=str(ARTIFACTS / "console-costs.png"))
    _assert_clean(page)


def test_the_llm_page_lists_prices_and_openrouter_models_fetched_by_a_worker(site_db, page):
    site_db.start_gateway()  # its django-q2 workers fetch OpenRouter's list
    _log_in(page, _staff("pricer"), next_url="/admin/llm/offeredmodel/")
    expect(page.locator("h1")).to_have_text("LLMs and prices")
    expect(page.locator("#llm-routes")).to_contain_text("gemini/gemini-3-flash-preview")
    expect(page.locator("#llm-parameters")).to_contain_text("OPENROUTER_API_KEY")
    # The worker's fetch lands in the database; the page is read again once it has.
    wait_for(
        lambda: OfferedModel.objects.filter(provider="openrouter").count() >= 2,
        "a worker to fetch OpenRouter's models",
        site_db.logs / "gateway.log",
    )
    page.reload()
    offered = page.locator("#llm-offered")
    expect(offered).to_contain_text("openrouter:anthropic/claude-sonnet-4")
    expect(offered.locator("tr", has_text="claude-sonnet-4")).to_contain_text("15.0000")
    expect(offered.locator("tr", has_text="llama-3.3")).to_contain_text("0.1300")
    _shot(page, "llms")
    _assert_clean(page)


def test_hostile_names_stay_inert_on_every_console_page(site_db, page):
    agent = _agent(f"Eve {secrets.token_hex(2)} {HOSTILE}", disabled=True)
    chat = _planned(agent, HOSTILE, [HOSTILE])
    Message.objects.create(conversation=chat, message_id=2, sender_id=chat.peer_id, sender_name=HOSTILE,
                           date=now(), text=HOSTILE)  # fmt: skip
    Memory.objects.create(agent=agent, kind="curated", partner_id=chat.peer_id, content=HOSTILE)
    LLMCall.objects.create(created=now(), agent=agent, provider="gemini", model="m", cost=Decimal("0.01"))
    _log_in(page, _staff("auditor"), next_url="/dashboard/")
    for url in (
        "/dashboard/",
        f"/dashboard/conversations/{chat.pk}/",
        f"/dashboard/conversations/{chat.pk}/log/",
        f"/dashboard/conversations/{chat.pk}/print/",
        "/dashboard/users/",
        f"/dashboard/users/{chat.peer_id}/",
        "/admin/llm/offeredmodel/",
    ):
        page.goto(url)
        if "offeredmodel" not in url:
            expect(page.locator("body")).to_contain_text(HOSTILE)
        assert page.locator("img[src=x]").count() == 0, url
        assert page.evaluate("document.querySelectorAll('script:not([src]):not([type])').length") == 0, url
    assert page.console_errors == []


def test_the_media_editor_describes_again_downloads_and_cleans_up(site_db, page, llm):
    """An AI description is made again on the workers at an operator's request, its file downloads,
    and an old file no row uses is listed, downloaded and deleted; a file in use is never listed."""
    import os

    from media_catalog.models import MediaDescription

    agent = _agent(f"Mona {secrets.token_hex(2)}")
    chat = Conversation.objects.create(agent=agent, peer_id=6100 + secrets.randbelow(10**5), kind="dm",
                                       title="Pia", last_message_at=now())  # fmt: skip
    store = site_db.workdir / "media" / "media_store"
    store.mkdir(parents=True, exist_ok=True)
    unique = f"AgPie{secrets.token_hex(3)}"
    (store / f"{unique}.png").write_bytes(_PNG)
    Message.objects.create(conversation=chat, message_id=1, sender_id=chat.peer_id, sender_name="Pia", date=now(),
                           media=[{"media_kind": "photo", "unique_id": unique, "mime": "image/png",
                                   "file": f"media_store/{unique}.png"}])  # fmt: skip
    row = MediaDescription.objects.create(unique_id=unique, kind="photo", description="Something round.")
    orphan = store / f"AgOld{secrets.token_hex(3)}.png"
    orphan.write_bytes(_PNG)
    two_days_ago = (now() - dt.timedelta(days=2)).timestamp()
    os.utime(orphan, (two_days_ago, two_days_ago))
    site_db.start_gateway()  # its django-q2 workers describe the media
    llm.reply_with("A cherry pie cooling on a windowsill.")

    _log_in(page, _staff("curator"), next_url=f"/admin/media_catalog/mediadescription/?q={unique}")
    page.locator(f"#result_list input[name=_selected_action][value='{row.pk}']").check()
    page.select_option("select[name=action]", "describe_again")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 item(s) will be described again")
    wait_for(
        lambda: MediaDescription.objects.get(pk=row.pk).description
        == "A cherry pie cooling on a windowsill.",
        "a worker to describe the photo again",
        site_db.logs / "gateway.log",
    )
    assert LLMCall.objects.filter(purpose="describe").exists()
    page.reload()
    expect(page.locator("#result_list")).to_contain_text("A cherry pie cooling on a windowsill.")

    page.goto(f"/admin/media_catalog/mediadescription/{row.pk}/change/")
    with page.expect_download() as download_info:
        page.get_by_role("link", name="Download the file").click()
    assert open(download_info.value.path(), "rb").read() == _PNG

    page.goto("/admin/media_catalog/mediadescription/")
    page.click("#unused-files-link")
    listed = page.locator("#unused-list")
    expect(listed).to_contain_text(orphan.name)
    expect(listed).not_to_contain_text(unique)  # a message uses it
    with page.expect_download() as download_info:
        listed.locator("tr", has_text=orphan.name).get_by_role("link", name="download").click()
    assert download_info.value.suggested_filename == orphan.name
    _shot(page, "unused-media")
    listed.locator("tr", has_text=orphan.name).locator("input[name=name]").check()
    page.click("#delete-unused")
    expect(page.locator(".messagelist")).to_contain_text("Deleted 1 unused file(s).")
    assert not orphan.exists() and (store / f"{unique}.png").exists()
    _assert_clean(page)
