"""Pages a turn retrieved are kept for the conversation's next turns for
CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS (the original's FETCHED_RESOURCE_LIFETIME_SECONDS, 300 s),
after the history, so the cached prefix is the same as without them."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentDocument
from conversations.models import TaskGraph
from engine.tests.harness import tasks
from llm.tests import local_site
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db
retriever, site = local_site.retriever, local_site.site  # the shared retrieval fixtures
PAGE = "Sam likes sourdough."


def _contents(request) -> str:
    return json.dumps(request.json["contents"], ensure_ascii=False)


def _first_turn(retriever, harness, fake_llm) -> None:
    AgentDocument.objects.create(agent=retriever, name="Friends.md", content=PAGE)
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:Friends.md"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sourdough!"}))
    sandbox_say(agent=retriever, text="what does Sam like?")
    harness.settle()
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: Sourdough!"


def test_a_follow_up_within_five_minutes_still_has_the_retrieved_page_after_the_history(
    retriever, harness, fake_llm, clock
):
    _first_turn(retriever, harness, fake_llm)
    clock.advance(150)
    fake_llm.reply_with(tasks({"kind": "send", "text": "White sourdough."}))
    sandbox_say(agent=retriever, text="which kind?")
    harness.settle()

    follow_up = _contents(fake_llm.requests[2])
    assert len(fake_llm.requests) == 3  # answered without retrieving again
    assert PAGE in follow_up
    assert follow_up.index("which kind?") < follow_up.index(PAGE)  # after the history: the prefix is kept
    latest = TaskGraph.objects.order_by("-created").first()
    assert [page["url"] for page in latest.context["retrieved"]] == ["file:Friends.md"]


def test_the_page_is_gone_after_the_lifetime(retriever, harness, fake_llm, clock):
    _first_turn(retriever, harness, fake_llm)
    clock.advance(301)
    fake_llm.reply_with(tasks({"kind": "send", "text": "I would have to look again."}))
    sandbox_say(agent=retriever, text="which kind?")
    harness.settle()

    assert PAGE not in _contents(fake_llm.requests[2])


def test_the_lifetime_is_a_setting(retriever, harness, fake_llm, clock, settings):
    settings.CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS = 0
    _first_turn(retriever, harness, fake_llm)
    clock.advance(10)
    fake_llm.reply_with(tasks({"kind": "send", "text": "Hm?"}))
    sandbox_say(agent=retriever, text="which kind?")
    harness.settle()

    assert PAGE not in _contents(fake_llm.requests[2])
