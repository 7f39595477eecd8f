"""A conversation's tools on the dashboard: controls, task log, downloads, print view, translations."""

from __future__ import annotations

import base64

import pytest

from cindy_site.clock import now
from conversations.models import Conversation, Message, NodeStatus, TaskGraph, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from dashboard.tests.conftest import HOSTILE
from llm.models import Translation, text_digest

pytestmark = pytest.mark.django_db

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def chat(sandbox_agent, clock):
    return Conversation.objects.create(agent=sandbox_agent, peer_id=1001, kind="dm", title="Alice")


def _say(chat, message_id: int, text: str, *, is_agent: bool = False, **extra) -> Message:
    return Message.objects.create(
        conversation=chat,
        message_id=message_id,
        sender_id=None if is_agent else 1001,
        sender_name="" if is_agent else "Alice",
        is_agent=is_agent,
        date=now(),
        text=text,
        **extra,
    )


def _turn(chat, *, think=(), remembered=(), retrieved=(), sends=("Hello!",)) -> list[TaskNode]:
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=1)
    graph.context = {"retrieved": [{"url": url, "content": "page"} for url in retrieved]}
    graph.save()
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(
        status=NodeStatus.DONE,
        finished=now(),
        result={
            "tasks": ["send"] * len(sends),
            "think": list(think),
            "stored_entries": [{"kind": "remember", "content": text} for text in remembered],
        },
    )
    return graph_append_chain(after=received, tasks=[("send", {"text": text}) for text in sends])


def test_the_log_interleaves_messages_with_think_retrieve_and_remember(verified, chat, clock):
    _say(chat, 1, "What's the weather in Paris?")
    clock.advance(2)
    _turn(
        chat,
        think=["She wants the forecast."],
        retrieved=["https://weather.example/paris"],
        remembered=["Alice lives near Paris"],
        sends=["Sunny, 21°C."],
    )
    clock.advance(2)
    _say(chat, 3, "Sunny, 21°C.", is_agent=True)

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/log/").content.decode()

    order = [
        html.index("What&#x27;s the weather in Paris?"),
        html.index("She wants the forecast."),
        html.index("https://weather.example/paris"),
        html.index("Alice lives near Paris"),
        html.index('class="mono strong">send<'),
        html.index('data-message-id="3"'),
    ]
    assert order == sorted(order)
    assert "Pending work" in html and "Graph " in html


def test_the_log_page_costs_a_fixed_number_of_queries(verified, chat, django_assert_max_num_queries):
    for message_id in range(1, 40, 2):
        _say(chat, message_id, f"message {message_id}")
        _turn(chat, think=[f"thought {message_id}"])
    with django_assert_max_num_queries(20):
        response = verified.client.get(f"/dashboard/conversations/{chat.pk}/log/?lang=English")
    assert response.status_code == 200


def test_gag_and_llm_controls_change_the_conversation(verified, chat):
    client = verified.client
    client.post(f"/dashboard/conversations/{chat.pk}/gag/", {"gagged": "1"})
    assert Conversation.objects.get(pk=chat.pk).gagged

    response = client.post(f"/dashboard/conversations/{chat.pk}/llm/", {"llm_model": "grok"}, follow=True)
    assert Conversation.objects.get(pk=chat.pk).llm_model == "grok"
    assert "uses grok/grok-4-fast-non-reasoning (from this conversation)" in response.content.decode()

    response = client.post(
        f"/dashboard/conversations/{chat.pk}/llm/", {"llm_model": "llama-70b"}, follow=True
    )
    assert Conversation.objects.get(pk=chat.pk).llm_model == "grok"
    assert "LLM &quot;llama-70b&quot; is not a known name" in response.content.decode()


def test_cancel_buttons_cancel_one_node_then_the_graph_then_the_agent_s_work(verified, chat):
    first, second = _turn(chat, sends=["one", "two"])
    client = verified.client

    client.post(f"/dashboard/conversations/{chat.pk}/cancel/", {"node": first.pk})
    assert TaskNode.objects.get(pk=first.pk).status == NodeStatus.CANCELLED
    client.post(f"/dashboard/conversations/{chat.pk}/cancel/")
    assert TaskNode.objects.get(pk=second.pk).status == NodeStatus.CANCELLED

    _turn(chat)
    response = client.post(
        f"/dashboard/agents/{chat.agent_id}/cancel-work/", {"conversation": chat.pk}, follow=True
    )
    assert not TaskGraph.objects.filter(conversation=chat, status="active").exists()
    assert f"All pending work of {chat.agent.name} cancelled: 1 graph(s)." in response.content.decode()


def test_a_node_of_another_conversation_is_not_cancelled_from_this_page(verified, chat, sandbox_agent):
    other = Conversation.objects.create(agent=sandbox_agent, peer_id=1002, kind="dm", title="Bob")
    (node,) = _turn(other)

    verified.client.post(f"/dashboard/conversations/{chat.pk}/cancel/", {"node": node.pk})

    assert TaskNode.objects.get(pk=node.pk).status == NodeStatus.PENDING


def test_downloads_include_the_media_as_data_uris(verified, chat, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.png").write_bytes(PNG)
    _say(chat, 1, "my cat", media=[{"media_kind": "photo", "unique_id": "AgCat", "file": "photos/cat.png"}])
    data_uri = "data:image/png;base64," + base64.b64encode(PNG).decode()

    markdown = verified.client.get(f"/dashboard/conversations/{chat.pk}/download.md")
    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/download.html")

    assert markdown["Content-Disposition"] == f'attachment; filename="wendy-alice-{chat.pk}.md"'
    assert f"![‹a photo›]({data_uri})" in markdown.content.decode()
    assert f'src="{data_uri}"' in html.content.decode()
    assert "<script" not in html.content.decode() and "<link" not in html.content.decode()


def test_a_media_file_outside_the_media_root_is_never_embedded(verified, chat, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    (tmp_path / "media").mkdir()
    (tmp_path / "secret.png").write_bytes(PNG)
    _say(chat, 1, "", media=[{"media_kind": "photo", "unique_id": "AgX", "file": "../secret.png"}])

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/download.html").content.decode()

    assert "data:image" not in html


def test_the_print_view_is_the_whole_conversation_with_a_print_button(verified, chat):
    _say(chat, 1, "first")
    _say(chat, 2, "second", is_agent=True)

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/print/").content.decode()

    assert html.index("first") < html.index("second")
    assert 'id="print"' in html and "dashboard/print.js" in html


def test_cached_translations_are_shown_under_their_messages(verified, chat):
    _say(chat, 1, "Bonjour")
    Translation.objects.create(
        language="French", source_digest=text_digest("Bonjour"), source_text="Bonjour",
        translated_text="Hello", created=now(),
    )  # fmt: skip

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/log/?lang=French").content.decode()
    polled = verified.client.get(f"/dashboard/conversations/{chat.pk}/translations/?lang=French").json()

    assert '<div class="translation" data-message-id="1">Hello</div>' in html
    assert polled == {"translations": {"1": "Hello"}, "missing": 0}


def test_hostile_texts_stay_inert_in_the_log_print_view_and_downloads(verified, chat, hostile_agent):
    hostile = Conversation.objects.create(agent=hostile_agent, peer_id=66, kind="dm", title=HOSTILE)
    Message.objects.create(
        conversation=hostile, message_id=1, sender_id=66, sender_name=HOSTILE, date=now(), text=HOSTILE
    )
    _turn(hostile, think=[HOSTILE], remembered=[HOSTILE], retrieved=[HOSTILE], sends=[HOSTILE])
    base = f"/dashboard/conversations/{hostile.pk}"
    for url in (f"{base}/", f"{base}/log/", f"{base}/print/", f"{base}/download.html"):
        html = verified.client.get(url).content.decode()
        assert "<script>alert(1)" not in html and "<img src=x" not in html, url
    markdown = verified.client.get(f"{base}/download.md").content.decode()
    assert "<script>" not in markdown and "<img" not in markdown


def test_the_log_names_what_started_turns_without_a_message(verified, chat, clock):
    from conversations.services.initiative import conversation_nudge, conversation_xsend

    other = Conversation.objects.create(agent=chat.agent, peer_id=1002, kind="dm", title="Bob")
    _say(chat, 1, "Hello")
    graph_replan(
        conversation=chat,
        trigger="event",
        target_message_id=None,
        context={"event": {"id": "event-tea", "intent": "Ask how the tea tasting went"}},
    )
    clock.advance(2)
    conversation_nudge(conversation=chat, intent="Say good night", operator="olga")
    clock.advance(2)
    conversation_nudge(conversation=chat, operator="olga")
    clock.advance(2)
    conversation_xsend(
        source=other, target_peer_id=chat.peer_id, intent="Tell her Bob says hi", source_node_id=1
    )

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/log/").content.decode()

    assert "#?" not in html
    assert "Scheduled event event-tea: Ask how the tea tasting went" in html
    assert "Operator nudge by olga: Say good night" in html
    assert "Operator nudge by olga: (no intent: continue on its own)" in html
    assert "Cross-chat intention from Bob: Tell her Bob says hi" in html


def test_the_header_names_the_default_llm_an_operator_set_in_the_admin(verified, chat, clock, settings):
    from llm.models import OfferedModel, SiteParameter

    settings.DEFAULT_AGENT_LLM = "gemini"
    # Stored by another process: the page reads the stored value, not this process's old copy.
    SiteParameter.objects.create(name="DEFAULT_AGENT_LLM", value="grok", updated=clock.now())
    OfferedModel.objects.create(provider="openai", model="gpt-4o", llm_name="gpt-4o", offered=True)

    html = verified.client.get(f"/dashboard/conversations/{chat.pk}/").content.decode()

    effective = html.split('id="llm-effective">')[1].split("</span>")[0]
    assert (
        effective
        == "uses grok/grok-4-fast-non-reasoning (from the site default (DEFAULT_AGENT_LLM, set in the admin))"
    )
    choices = html.split('<datalist id="llm-choices">')[1].split("</datalist>")[0]
    assert choices.startswith('<option value="gpt-4o">')
