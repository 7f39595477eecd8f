"""A turn whose first route is away is answered through the fallback, once, and says so."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent
from engine.tests.harness import tasks
from llm.models import LLMCall
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db


def test_the_fallback_answers_once_and_the_activity_line_names_it(agent, harness, fake_llm, settings):
    settings.CINDY_LLM_FALLBACK = ["gpt-5-mini"]
    fake_llm.fail_next(503, message="The model is overloaded. Please try again later.")
    fake_llm.reply_with(tasks({"kind": "send", "text": "Still here!"}))

    sandbox_say(agent=agent, text="anyone there?")
    harness.settle()

    assert sandbox_transcript(agent=agent)[-1] == "Wendy: Still here!"
    assert [r.api for r in fake_llm.requests] == ["gemini", "openai"]
    assert list(LLMCall.objects.order_by("pk").values_list("provider", "status")) == [
        ("gemini", "error"),
        ("openai", "ok"),
    ]
    done = ActivityEvent.objects.get(kind=ActivityEvent.Kind.NODE_DONE, summary__startswith="received")
    assert done.summary.endswith(
        "planned send (answered by openai/gpt-5-mini (fallback after gemini/gemini-3-flash-preview failed))"
    )
