"""The Users pages (partners across agents) and the cost chart on the dashboard."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from agents.models import Agent
from cindy_site.clock import now
from conversations.models import Conversation, Message
from dashboard.costs import cost_chart
from dashboard.partners import partner_detail, partner_rows
from dashboard.tests.conftest import HOSTILE
from llm.costs import daily_costs
from llm.models import LLMCall
from memory.models import Memory

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents(db):
    return [
        Agent.objects.create(name=name, phone=f"+1555000000{i}", instructions="x", transport="sandbox")
        for i, name in enumerate(("Wendy", "Heidi"))
    ]


def _dm(agent, peer_id: int, title: str, *, messages_in: int, messages_out: int, cost: str) -> Conversation:
    chat = Conversation.objects.create(
        agent=agent, peer_id=peer_id, kind="dm", title=title, username=title.lower(), last_message_at=now()
    )
    for n in range(messages_in + messages_out):
        Message.objects.create(
            conversation=chat, message_id=n + 1, is_agent=n >= messages_in, date=now(), text=f"m{n}"
        )
    LLMCall.objects.create(
        created=now(), agent=agent, conversation=chat, provider="gemini", model="m", cost=Decimal(cost)
    )
    return chat


def test_a_partner_is_counted_across_agents(agents, clock):
    wendy, heidi = agents
    _dm(wendy, 1001, "Alice", messages_in=3, messages_out=2, cost="0.25")
    _dm(heidi, 1001, "Alice", messages_in=1, messages_out=1, cost="0.5")
    _dm(wendy, 1002, "Bob", messages_in=1, messages_out=0, cost="0")

    rows = {row["peer_id"]: row for row in partner_rows()}

    alice = rows[1001]
    assert (alice["messages_in"], alice["messages_out"], alice["cost"]) == (4, 3, Decimal("0.75"))
    assert sorted(alice["agents"]) == ["Heidi", "Wendy"]
    assert rows[1002]["cost"] == Decimal("0")


def test_the_users_list_costs_a_fixed_number_of_queries(
    verified, agents, clock, django_assert_max_num_queries
):
    for peer in range(20):
        _dm(agents[peer % 2], 2000 + peer, f"User{peer}", messages_in=2, messages_out=1, cost="0.01")
    with django_assert_max_num_queries(8):
        response = verified.client.get("/dashboard/users/")
    assert response.content.decode().count("data-peer-id=") == 20


def test_a_partner_page_shows_each_agent_s_costs_and_memories(verified, agents, clock):
    wendy, heidi = agents
    _dm(wendy, 1001, "Alice", messages_in=3, messages_out=2, cost="0.25")
    _dm(heidi, 1001, "Alice", messages_in=1, messages_out=1, cost="0.5")
    Memory.objects.create(agent=wendy, kind="curated", partner_id=1001, content="Alice bakes sourdough")
    Memory.objects.create(
        agent=heidi, kind="episodic", creation_channel_id=1001, content="Alice is moving to Lyon"
    )
    Memory.objects.create(agent=heidi, kind="curated", partner_id=999, content="someone else")

    detail = partner_detail(peer_id=1001)
    html = verified.client.get("/dashboard/users/1001/").content.decode()

    assert detail["total_cost"] == Decimal("0.75")
    assert [a["conversation"].agent.name for a in detail["agents"]] == ["Heidi", "Wendy"]
    assert "Alice bakes sourdough" in html and "Alice is moving to Lyon" in html
    assert "someone else" not in html
    assert "3 in, 2 out" in html and "0.2500" in html


def test_an_unknown_partner_is_not_found(verified, agents):
    assert verified.client.get("/dashboard/users/4242/").status_code == 404


def test_costs_are_summed_per_agent_and_day_in_the_site_time_zone(agents, clock, settings):
    settings.TIME_ZONE = "Europe/Paris"
    wendy, heidi = agents
    today = now()
    for agent, when, cost in (
        (wendy, today, "0.10"),
        (wendy, today, "0.05"),
        (heidi, today - dt.timedelta(days=1), "0.20"),
        (heidi, today - dt.timedelta(days=30), "9"),
    ):
        LLMCall.objects.create(created=when, agent=agent, provider="gemini", model="m", cost=Decimal(cost))

    costs = daily_costs(days=14)

    series = {s["name"]: s["values"] for s in costs["agents"]}
    assert series["Wendy"][-1] == Decimal("0.15") and sum(series["Wendy"][:-1]) == 0
    assert series["Heidi"][-2] == Decimal("0.20")
    assert costs["total"] == Decimal("0.35")
    chart = cost_chart(costs)
    assert [item["name"] for item in chart["legend"]] == ["Heidi", "Wendy"]
    assert chart["grid"][-1]["label"] == "$0.2"  # the top gridline is a round value above the tallest bar
    assert len(chart["bars"]) == 14 and chart["bars"][-1]["label"]


def test_the_dashboard_draws_the_cost_chart_with_escaped_agent_names(verified, hostile_agent, clock):
    LLMCall.objects.create(
        created=now(), agent=hostile_agent, provider="gemini", model="m", cost=Decimal("1")
    )

    html = verified.client.get("/dashboard/").content.decode()

    assert '<svg class="chart" id="cost-chart"' in html
    assert "<rect " in html and "$1.0000" in html
    assert "<script>alert(1)" not in html and "<img src=x" not in html


def test_hostile_partner_names_and_memories_stay_inert(verified, hostile_agent, clock):
    _dm(hostile_agent, 66, HOSTILE, messages_in=1, messages_out=0, cost="0")
    Memory.objects.create(agent=hostile_agent, kind="curated", partner_id=66, content=HOSTILE)

    for url in ("/dashboard/users/", "/dashboard/users/66/"):
        html = verified.client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html, url


def test_the_agent_is_not_its_own_user_and_its_own_chat_reads_saved_messages(verified, agents, clock):
    wendy, heidi = agents
    Agent.objects.filter(pk=wendy.pk).update(telegram_user_id=5005)
    wendy.refresh_from_db()
    # Telegram titles the agent's chat with itself with the agent's own name.
    own = _dm(wendy, 5005, "Wendy", messages_in=2, messages_out=0, cost="0.1")
    _dm(heidi, 5005, "Wendy", messages_in=1, messages_out=1, cost="0")  # another agent's partner
    _dm(wendy, 1001, "Alice", messages_in=1, messages_out=1, cost="0")

    rows = {row["peer_id"]: row for row in partner_rows()}
    assert rows[5005]["agents"] == ["Heidi"]
    assert rows[1001]["agents"] == ["Wendy"]
    assert [item["conversation"].agent for item in partner_detail(peer_id=5005)["agents"]] == [heidi]

    html = verified.client.get("/dashboard/users/").content.decode()
    assert html.count('data-peer-id="5005"') == 1
    assert str(own) == "Wendy ↔ Saved Messages"
    page = verified.client.get(f"/dashboard/conversations/{own.pk}/").content.decode()
    assert "Wendy ↔ Saved Messages" in page and "Wendy ↔ Wendy" not in page
    from dashboard.selectors import conversation_rows

    assert {row["id"]: row["title"] for row in conversation_rows()}[own.pk] == "Saved Messages"


def test_a_picture_s_cost_counts_in_the_cost_chart_and_on_the_users_pages(verified, agents, clock):
    from llm.request import Usage
    from llm.usage import llm_call_record

    wendy = agents[0]
    chat = _dm(wendy, 1003, "Cleo", messages_in=1, messages_out=1, cost="0")
    llm_call_record(
        provider="gemini",
        model="gemini-2.5-flash-image",
        usage=Usage(input_tokens=300, output_tokens=1290, image_output_tokens=1290),
        status="ok",
        latency_ms=900,
        purpose=LLMCall.Purpose.IMAGE,
        agent_id=wendy.pk,
        conversation_id=chat.pk,
        node_id=None,
    )
    # 300 input tokens at 0.30 and 1290 image output tokens at 30.00 USD per million (the seeded price).
    picture = Decimal("0.038790")

    assert daily_costs(days=14)["total"] == picture
    assert partner_detail(peer_id=1003)["total_cost"] == picture
    assert "$0.0388" in verified.client.get("/dashboard/").content.decode()
    assert "0.0388" in verified.client.get("/dashboard/users/1003/").content.decode()
    users = verified.client.get("/dashboard/users/").content.decode()
    assert "0.0388" in users.split('data-peer-id="1003"')[1].split("</tr>")[0]
