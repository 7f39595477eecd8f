"""The main staff pages in Chromium: axe-core finds no serious or critical accessibility problem,
and at 1280x800 no page scrolls sideways, no table is wider than its card, no schedule label spills
out of its block.

axe-core is the copy bundled with the pinned `axe-playwright-python` (requirements/test.txt); it is
injected into each page and run there. Shares the live site of test_browser.py (one site per module)
and the browser of all browser tests. Screenshots go under artifacts/width-1280/.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterator
from decimal import Decimal

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, Message, TaskGraph, TaskNode
from dashboard.tests import test_browser as shared
from dashboard.tests.test_browser import ARTIFACTS, _agent, _log_in, _staff, expect, watched_page

pytestmark = pytest.mark.browser

llm, site, site_db = shared.llm, shared.site, shared.site_db

SHOTS = ARTIFACTS / "width-1280"
WIDTH, HEIGHT = 1280, 800
#: The impacts that fail the check; axe's other two are "moderate" and "minor".
FAILING_IMPACTS = {"serious", "critical"}

LONG_REPLY = (
    "Oh, the Foxton staircase! Ten locks, two flights of five, and a side pond for every chamber so "
    "that the water is saved for the next boat. Sam, your great-grandfather's ledger would list each "
    "boat by name, its cargo and the hour it went through: coal down, pottery up, and on a good day "
    "seventy boats, which is why they built the inclined plane beside it in nineteen hundred. "
) * 3


@pytest.fixture
def page(chromium, site) -> Iterator[object]:
    with watched_page(chromium, site, width=WIDTH, height=HEIGHT, failed_requests=True) as page:
        yield page


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _axe_problems(page) -> list[str]:
    """Each serious or critical axe-core finding on the page, one line per element it names."""
    from axe_playwright_python.base import AXE_SCRIPT

    page.evaluate(AXE_SCRIPT)
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{rule['id']} ({rule['impact']}) at {' '.join(map(str, node['target']))}: {_first_reason(node)}"
        for rule in results["violations"]
        if rule["impact"] in FAILING_IMPACTS
        for node in rule["nodes"]
    ]


def _first_reason(node: dict) -> str:
    """The first check that failed on the element, in axe's words."""
    checks = node["all"] + node["any"] + node["none"]
    return checks[0]["message"] if checks else node.get("failureSummary", "")


def _no_sideways_scroll(page, name: str) -> None:
    widths = page.evaluate(
        "({scroll: document.scrollingElement.scrollWidth, client: document.scrollingElement.clientWidth})"
    )
    assert widths["scroll"] <= widths["client"], f"{name} scrolls sideways: {widths}"


def _inside(page, inner: str, outer: str, name: str) -> None:
    """Every element matching `inner` ends inside the visible box of its nearest `outer` ancestor,
    and that box needs no scrolling of its own: nothing in it is behind a scrollbar or cut off."""
    found = page.evaluate(
        """([inner, outer]) => [...document.querySelectorAll(inner)].map(el => {
            const box = el.closest(outer), a = el.getBoundingClientRect(), b = box.getBoundingClientRect();
            return {text: el.textContent.trim().slice(0, 40), right: a.right, edge: b.right,
                    scroll: box.scrollWidth, client: box.clientWidth};
        })""",
        [inner, outer],
    )
    assert found, f"{name}: nothing matches {inner}"
    for item in found:
        assert item["right"] <= item["edge"] + 1, f"{name}: {inner} ends past its {outer}: {item}"
        assert item["scroll"] <= item["client"] + 1, f"{name}: {outer} scrolls sideways: {item}"


def _busy_agent():
    """A sandbox agent with what makes pages long and wide: memories, a conversation with a long
    reply in its task graph, many LLM calls, and a day of short schedule blocks."""
    from zoneinfo import ZoneInfo

    from llm.models import LLMCall
    from memory.models import Memory, ScheduleEntry
    from sandbox.services.chats import sandbox_chat_for, sandbox_person, sandbox_post, sandbox_user_for_agent

    agent = _agent(f"Orla {secrets.token_hex(2)}", timezone="Europe/London")
    chat = sandbox_chat_for(agent=agent, as_name="Sam")
    sandbox_post(
        chat=chat, sender=sandbox_person(name="Sam"), text="What do you know about the locks at Foxton?"
    )
    sandbox_post(chat=chat, sender=sandbox_user_for_agent(agent=agent), text=LONG_REPLY)
    moment = now()
    conversation = Conversation.objects.create(
        agent=agent,
        peer_id=sandbox_person(name="Sam").user_id,
        kind="dm",
        title="Sam Whitaker",
        last_message_at=moment,
    )
    Message.objects.create(
        conversation=conversation,
        message_id=1,
        sender_id=conversation.peer_id,
        sender_name="Sam",
        date=moment,
        text="What do you know about the locks at Foxton?",
    )
    Message.objects.create(
        conversation=conversation,
        message_id=2,
        sender_id=1,
        sender_name=agent.name,
        date=moment,
        text=LONG_REPLY,
    )
    for index in range(5):
        Memory.objects.create(
            agent=agent,
            kind="episodic",
            content=f"Sam's great-grandfather worked the locks at Foxton ({index}); he kept a ledger.",
            created=moment,
            creation_channel="Sam Whitaker",
        )
    graph = TaskGraph.objects.create(
        conversation=conversation, active_slot=conversation.pk, trigger="message", created=moment
    )
    for sequence, (kind, params) in enumerate(
        [
            ("received", {"text": "What do you know about the locks at Foxton?"}),
            ("send", {"text": LONG_REPLY}),
        ]
    ):
        TaskNode.objects.create(
            graph=graph,
            conversation=conversation,
            agent=agent,
            kind=kind,
            sequence=sequence,
            status="pending",
            not_before=moment,
            created=moment,
            params=params,
        )
    LLMCall.objects.bulk_create(
        LLMCall(
            created=moment - dt.timedelta(minutes=index),
            agent=agent,
            conversation=conversation,
            provider="anthropic",
            model="claude-sonnet-4-5-20250929-extended-context",
            input_tokens=123_456 + index,
            cached_tokens=98_765,
            cache_write_tokens=12_345,
            output_tokens=4_321,
            thinking_tokens=2_048,
            cost=Decimal("0.123456"),
            latency_ms=12_345,
            status="ok" if index % 3 else "error",
            explicit_cache=bool(index % 2),
        )
        for index in range(60)
    )
    day = dt.datetime(2026, 11, 26, tzinfo=ZoneInfo("Europe/London"))
    for start, end, activity in SHORT_DAY:
        ScheduleEntry.objects.create(
            agent=agent,
            activity=activity,
            description=f"{activity}, as on every weekday",
            start=day + dt.timedelta(hours=start),
            end=day + dt.timedelta(hours=end),
            responsiveness=40,
            created=moment,
        )
    return agent, conversation


#: Blocks from a quarter of an hour (some 10 px at 1280 px) to the rest of the day.
SHORT_DAY = [
    (0, 7.5, "Asleep"),
    (7.5, 7.75, "Kettle on"),
    (7.75, 8, "Feeding the canal cat"),
    (8, 8.5, "Breakfast and the morning paper"),
    (8.5, 12, "Opening the reading room and sorting returns"),
    (12, 12.25, "Lunch"),
    (12.25, 24, "Reference desk and the evening at home"),
]


def _pages(agent, conversation) -> list[tuple[str, str]]:
    return [
        ("dashboard", "/dashboard/"),
        ("agent", f"/admin/agents/agent/{agent.pk}/change/"),
        ("conversation", f"/dashboard/conversations/{conversation.pk}/"),
        ("llm-calls", f"/admin/llm/llmcall/?agent__id__exact={agent.pk}"),
        ("sandbox", f"/dashboard/sandbox/?agent={agent.pk}&as_name=Sam"),
        ("timeline", f"/admin/memory/scheduleentry/timeline/{agent.pk}/?day=2026-11-26"),
    ]


def _ready(page, name: str) -> None:
    """Wait for what the page's script draws from the live socket."""
    if name == "dashboard":
        expect(page.locator("#conversations article.conversation").first).to_be_visible()
    elif name == "sandbox":
        expect(page.locator("#graph table.nodes")).to_be_visible()
        expect(page.locator("#transcript .bubble").first).to_be_visible()


def test_axe_finds_nothing_serious_on_the_main_pages(site_db, page):
    agent, conversation = _busy_agent()
    page.goto("/admin/login/")
    problems = {"login": _axe_problems(page)}
    _log_in(page, _staff("operator"), next_url="/dashboard/")
    for name, path in _pages(agent, conversation):
        page.goto(path)
        _ready(page, name)
        problems[name] = _axe_problems(page)
    found = [f"{name}: {line}" for name, lines in problems.items() for line in lines]
    assert not found, "axe-core finds serious or critical problems:\n" + "\n".join(found)
    assert page.problems == []


def test_no_main_page_scrolls_sideways_at_1280_px(site_db, page):
    agent, conversation = _busy_agent()
    failures: list[str] = []

    def check(function, *args) -> None:  # every page is checked; the failures are reported together
        try:
            function(*args)
        except AssertionError as exc:
            failures.append(str(exc))

    page.goto("/admin/login/")
    check(_no_sideways_scroll, page, "login")
    _log_in(page, _staff("operator"), next_url="/dashboard/")
    for name, path in _pages(agent, conversation):
        page.goto(path)
        _ready(page, name)
        _shot(page, name)
        check(_no_sideways_scroll, page, name)
        if name == "llm-calls":  # every column in view, not behind the list's own scrollbar
            expect(page.locator("#result_list tbody tr")).to_have_count(60)
            for column in ("cost", "latency_ms", "status"):
                check(_inside, page, f"#result_list td.field-{column}", ".results", name)
        elif name in ("sandbox", "dashboard"):  # the task graph inside its card, the reply unclipped
            scope = "#graph" if name == "sandbox" else f"article[data-conversation-id='{conversation.pk}']"
            check(_inside, page, f"{scope} table.nodes td", "article.conversation", name)
            expect(page.locator(f"{scope} td.params", has_text="inclined plane").first).to_be_visible()
        elif name == "timeline":  # each label inside its block, even on a quarter of an hour
            expect(page.locator("#timeline a.cindy-block")).to_have_count(len(SHORT_DAY))
            check(_labels_inside_their_blocks, page)
    assert not failures, "\n".join(failures)
    assert page.problems == []


def _labels_inside_their_blocks(page) -> None:
    """Each visible line of a block's label ends inside the block; a line too long for it is cut
    short with an ellipsis (the table under the timeline has every entry in full)."""
    lines = page.evaluate(
        """() => [...document.querySelectorAll('#timeline a.cindy-block')].flatMap(block => {
            const edge = block.getBoundingClientRect();
            return [...block.querySelectorAll('.label')].map(line => {
                const box = line.getBoundingClientRect(), style = getComputedStyle(line);
                return {text: line.textContent, shown: style.display !== 'none' && box.width > 0,
                        left: box.left, right: box.right, top: box.top, bottom: box.bottom,
                        edgeLeft: edge.left, edgeRight: edge.right, edgeTop: edge.top, edgeBottom: edge.bottom,
                        cut: line.scrollWidth > line.clientWidth, ellipsis: style.textOverflow === 'ellipsis'
                             && style.overflowX === 'hidden' && style.whiteSpace === 'nowrap'};
            });
        })"""
    )
    assert lines, "the blocks have no labels"
    blocks = page.evaluate(
        """() => [...document.querySelectorAll('#timeline a.cindy-block')].map(block => ({
            text: block.innerText, width: block.clientWidth, height: block.clientHeight,
            contentWidth: block.scrollWidth, contentHeight: block.scrollHeight}))"""
    )
    for block in blocks:  # a label taller or wider than its block is cut off at the block's edge
        assert block["contentWidth"] <= block["width"] + 1, f"a label is wider than its block: {block}"
        assert block["contentHeight"] <= block["height"] + 1, f"a label is taller than its block: {block}"
    for line in lines:
        if not line["shown"]:
            continue
        assert line["edgeLeft"] - 0.5 <= line["left"] and line["right"] <= line["edgeRight"] + 0.5, line
        assert line["edgeTop"] - 0.5 <= line["top"] and line["bottom"] <= line["edgeBottom"] + 0.5, line
        assert not line["cut"] or line["ellipsis"], f"a label is cut off without an ellipsis: {line}"
