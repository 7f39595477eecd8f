"""Telegram's service account (777000) is never a partner, and bots are answered only where allowed."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from conversations.models import TELEGRAM_SERVICE_USER_ID, ActivityEvent, Conversation, Message, TaskGraph
from conversations.services.ingest import REDACTED_TEXT
from conversations.services.initiative import XSendRefused, conversation_xsend
from dashboard.partners import partner_rows
from engine.tests.harness import Harness
from sandbox.models import SandboxUser
from sandbox.services.chats import SandboxError, sandbox_say

pytestmark = pytest.mark.django_db

CODE = "52841"
LOGIN = f"Login code: {CODE}. Do not give this code to anyone, even if they say they are from Telegram!"
WEB_LOGIN = "Web login code. This is your login code:\nAbC-12dEfGh\n\nDo not give this code to anyone."


def _recorded() -> str:
    texts = list(Message.objects.values_list("text", flat=True))
    events = [(e.summary, e.data) for e in ActivityEvent.objects.all()]
    return json.dumps([texts, events], ensure_ascii=False)


@pytest.fixture
def harness(agent, clock, fake_llm):
    fake_llm.set_default_reply(json.dumps([{"kind": "send", "text": "hello"}]))
    h = Harness(clock)
    h.start()
    return h


def test_a_login_code_from_telegram_starts_no_turn_and_is_redacted_everywhere(agent, harness, fake_llm):
    sandbox_say(agent=agent, text=LOGIN, user_id=TELEGRAM_SERVICE_USER_ID)
    sandbox_say(agent=agent, text=WEB_LOGIN, user_id=TELEGRAM_SERVICE_USER_ID)
    harness.settle()

    assert fake_llm.requests == []
    assert not TaskGraph.objects.exists()
    texts = list(Message.objects.order_by("message_id").values_list("text", flat=True))
    assert texts == [
        f"Login code: {REDACTED_TEXT}. Do not give this code to anyone, even if they say they are from Telegram!",
        f"Web login code. This is your login code:\n{REDACTED_TEXT}\n\nDo not give this code to anyone.",
    ]
    assert CODE not in _recorded() and "AbC-12dEfGh" not in _recorded()
    assert Conversation.objects.get(peer_id=TELEGRAM_SERVICE_USER_ID).is_telegram_service


def test_telegram_is_not_listed_among_the_agents_partners(agent, harness):
    sandbox_say(agent=agent, text=LOGIN, user_id=TELEGRAM_SERVICE_USER_ID)
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()

    assert [row["name"] for row in partner_rows()] == ["Ann"]


def test_a_redelivered_service_message_stays_redacted(agent, harness):
    sandbox_say(agent=agent, text=LOGIN, user_id=TELEGRAM_SERVICE_USER_ID)
    harness.settle()
    harness.gateway.clients[agent.pk].connected = False  # a reconnect reads the history again
    harness.step("connect")
    harness.settle()

    assert Message.objects.get().text.startswith(f"Login code: {REDACTED_TEXT}.")
    assert CODE not in _recorded()


def test_a_bot_is_recorded_but_not_answered_by_default(agent, harness, fake_llm):
    sandbox_say(agent=agent, text="I am a helpful bot", as_name="HelperBot", bot=True)
    harness.settle()

    message = Message.objects.get()
    assert (message.text, message.sender_is_bot) == ("I am a helpful bot", True)
    assert fake_llm.requests == [] and not TaskGraph.objects.exists()


def test_the_answer_bots_flag_lets_the_agent_answer_bots(agent, harness, fake_llm):
    agent.answer_bots = True
    agent.save()
    sandbox_say(agent=agent, text="I am a helpful bot", as_name="HelperBot", bot=True)
    harness.settle()

    assert len(fake_llm.requests) == 1
    assert TaskGraph.objects.get().trigger == TaskGraph.Trigger.NEW_CONVERSATION


def test_a_chats_answer_bots_setting_lets_the_agent_answer_bots_there_only(agent, harness, fake_llm):
    sandbox_say(agent=agent, text="@Wendy status?", as_name="GroupBot", bot=True, group="Ops")
    sandbox_say(agent=agent, text="I am a helpful bot", as_name="HelperBot", bot=True)
    harness.settle()
    assert fake_llm.requests == []

    Conversation.objects.filter(title="Ops").update(answer_bots=True)
    sandbox_say(agent=agent, text="@Wendy status now?", as_name="GroupBot", bot=True, group="Ops")
    sandbox_say(agent=agent, text="still here", as_name="HelperBot", bot=True)
    harness.settle()

    assert len(fake_llm.requests) == 1
    assert TaskGraph.objects.get().conversation.title == "Ops"


def test_sandbox_say_writes_as_telegram_and_as_a_bot(agent, harness, fake_llm):
    out = io.StringIO()
    call_command("sandbox", "say", agent.name, LOGIN, "--user-id", str(TELEGRAM_SERVICE_USER_ID), stdout=out)
    call_command("sandbox", "say", agent.name, "beep", "--bot", "--as", "HelperBot", stdout=out)
    harness.settle()

    assert out.getvalue() == "sent #1\nsent #1\n"
    telegram = SandboxUser.objects.get(user_id=TELEGRAM_SERVICE_USER_ID)
    assert (telegram.name, telegram.is_bot) == ("Telegram", False)
    assert SandboxUser.objects.get(name="HelperBot").is_bot
    assert fake_llm.requests == []
    assert Message.objects.get(sender_id=TELEGRAM_SERVICE_USER_ID).redacted


def test_sandbox_say_refuses_an_agents_id_and_a_person_passed_off_as_a_bot(agent, other_agent, clock):
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    heidi = sandbox_say(agent=other_agent, text="hi", as_name="Ann").chat.members.get(agent=other_agent)

    with pytest.raises(CommandError, match=f"--user-id {heidi.user_id} is the agent 'Heidi'"):
        call_command("sandbox", "say", agent.name, "hi", "--user-id", str(heidi.user_id))
    with pytest.raises(SandboxError, match="'Ann' is a person, not a bot: pick another name"):
        sandbox_say(agent=agent, text="hi", as_name="Ann", bot=True)
    with pytest.raises(CommandError, match="a user id is a positive number"):
        call_command("sandbox", "say", agent.name, "hi", "--user-id", "0")


def test_an_xsend_never_starts_a_turn_with_telegram(agent, harness):
    sandbox_say(agent=agent, text=LOGIN, user_id=TELEGRAM_SERVICE_USER_ID)
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    ann = Conversation.objects.get(title="Ann")

    with pytest.raises(XSendRefused, match="777000 is Telegram's service account, never a partner"):
        conversation_xsend(
            source=ann, target_peer_id=TELEGRAM_SERVICE_USER_ID, intent="ask", source_node_id=1
        )
    assert not TaskGraph.objects.filter(conversation__peer_id=TELEGRAM_SERVICE_USER_ID).exists()
