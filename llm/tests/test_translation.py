"""Translating a conversation for an operator: cached per text, batched, costed as `translate`."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from conversations.models import ActivityEvent
from llm.models import LLMCall, Translation
from llm.translation import (
    TRANSLATE_BATCH,
    cached_translations,
    conversation_translate,
    conversation_translation_request,
    translatable_messages,
)

pytestmark = pytest.mark.django_db


def test_messages_are_translated_once_and_cached_per_text(dm, say, fake_llm, clock):
    say(dm, 1, "Bonjour")
    say(dm, 2, "Ça va ?", is_agent=True)
    say(dm, 3, "Bonjour")
    fake_llm.reply_with(
        json.dumps({"translations": [{"id": "0", "text": "Hello"}, {"id": "1", "text": "How are you?"}]})
    )

    assert conversation_translate(conversation_id=dm.pk, language="English") == 2

    sent = json.loads(fake_llm.requests[0].json["contents"][-1]["parts"][0]["text"])
    assert sorted(item["text"] for item in sent) == ["Bonjour", "Ça va ?"]
    shown = cached_translations(translatable_messages(dm), language="English")
    assert shown == {1: "Hello", 2: "How are you?", 3: "Hello"}
    call = LLMCall.objects.get()
    assert (call.purpose, call.agent_id, call.conversation_id) == ("translate", dm.agent_id, dm.pk)

    # Asked again: everything is cached, no LLM call.
    assert conversation_translate(conversation_id=dm.pk, language="English") == 0
    assert len(fake_llm.requests) == 1


def test_long_conversations_go_in_batches(dm, say, fake_llm, clock):
    for message_id in range(1, TRANSLATE_BATCH + 4):
        say(dm, message_id, f"texte {message_id}")
    fake_llm.reply_with(json.dumps({"translations": [{"id": str(i), "text": f"t{i}"} for i in range(10)]}))
    fake_llm.reply_with(json.dumps({"translations": [{"id": str(i), "text": f"u{i}"} for i in range(3)]}))

    assert conversation_translate(conversation_id=dm.pk, language="English") == TRANSLATE_BATCH + 3
    assert [len(json.loads(r.json["contents"][-1]["parts"][0]["text"])) for r in fake_llm.requests] == [10, 3]
    assert Translation.objects.count() == TRANSLATE_BATCH + 3


def test_an_unusable_reply_keeps_nothing_and_says_why(dm, say, fake_llm, clock):
    say(dm, 1, "Hola")
    fake_llm.reply_with("not json at all")

    assert conversation_translate(conversation_id=dm.pk, language="English") == 0

    assert not Translation.objects.exists()
    event = ActivityEvent.objects.filter(kind="info").get()
    assert "the reply was not usable (not JSON" in event.summary


def test_an_edited_message_gets_a_fresh_translation(dm, say, fake_llm, clock):
    message = say(dm, 1, "Hola")
    fake_llm.reply_with(json.dumps({"translations": [{"id": "0", "text": "Hello"}]}))
    conversation_translate(conversation_id=dm.pk, language="English")
    message.text = "Adiós"
    message.save()
    fake_llm.reply_with(json.dumps({"translations": [{"id": "0", "text": "Goodbye"}]}))

    conversation_translate(conversation_id=dm.pk, language="English")

    assert cached_translations([message], language="English") == {1: "Goodbye"}


def test_a_translation_request_runs_on_the_workers_after_commit(
    dm, say, fake_llm, clock, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr("django_q.conf.Conf.SYNC", True)  # django-q2 runs the task in this process
    say(dm, 1, "Hallo")
    fake_llm.reply_with(json.dumps({"translations": [{"id": "0", "text": "Hello"}]}))

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        conversation_translation_request(conversation=dm, language="English")
    assert not Translation.objects.exists()
    for callback in callbacks:
        callback()

    assert Translation.objects.get().translated_text == "Hello"


def test_an_unknown_language_is_refused_with_the_choices(dm):
    with pytest.raises(ValidationError, match='language "Klingon" is not offered: choose one of English'):
        conversation_translation_request(conversation=dm, language="Klingon")
