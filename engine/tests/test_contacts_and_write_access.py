"""A DM partner joins the contacts (engine/contacts.py); no turn where the account cannot write
(engine/triggers.py, Conversation.cannot_write)."""

from __future__ import annotations

import pytest

from conversations.models import ActivityEvent, Conversation
from conversations.services.initiative import XSendRefused, conversation_xsend
from conversations.transport.base import WRITE_REFUSALS
from engine.tests.harness import tasks
from sandbox.models import SandboxMember, SandboxUser
from sandbox.services.chats import sandbox_group, sandbox_person, sandbox_say, sandbox_user_for_agent

pytestmark = pytest.mark.django_db


def _contacts(agent) -> list[int]:
    return SandboxUser.objects.get(agent=agent).contact_user_ids


def test_the_partner_is_in_the_contacts_after_the_first_dm(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "hello Ann"}))
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    harness.settle()
    ann = SandboxUser.objects.get(name="Ann")
    assert _contacts(agent) == [ann.user_id]
    conversation = Conversation.objects.get(agent=agent, peer_id=ann.user_id)
    assert conversation.partner_in_contacts
    assert ActivityEvent.objects.filter(summary="added Ann to the account's contacts").count() == 1

    fake_llm.reply_with(tasks({"kind": "send", "text": "again"}))
    sandbox_say(agent=agent, text="hi again", as_name="Ann")
    harness.settle()
    assert ActivityEvent.objects.filter(summary__startswith="added Ann").count() == 1  # once only


def test_group_members_and_the_telegram_service_are_not_added(agent, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "send", "text": "hi all"}))
    sandbox_say(agent=agent, text="@Wendy hello", as_name="Bob", group="Club")
    sandbox_say(agent=agent, text="Login code: 12345", as_name="Telegram", user_id=777000)
    harness.settle()
    assert _contacts(agent) == []


def _restricted_group(agent, how: str) -> None:
    me = sandbox_user_for_agent(agent=agent)
    chat = sandbox_group(title="Notices", members=[me, sandbox_person(name="Bob")])
    SandboxMember.objects.filter(chat=chat, user=me).update(cannot_write=how)


@pytest.mark.parametrize("how", ["read_only", "restricted", "banned"])
def test_a_callout_where_the_account_cannot_write_starts_no_turn_and_says_why(agent, harness, fake_llm, how):
    _restricted_group(agent, how)
    sandbox_say(agent=agent, text="@Wendy can you help?", as_name="Bob", group="Notices")
    harness.settle()
    assert fake_llm.requests == []
    conversation = Conversation.objects.get(title="Notices")
    assert conversation.cannot_write == WRITE_REFUSALS[how]
    assert not conversation.graphs.exists()
    (refusal,) = ActivityEvent.objects.filter(summary__contains="cannot write here")
    assert refusal.conversation_id == conversation.pk
    assert refusal.summary == f"Bob #1 not answered: the account cannot write here: {WRITE_REFUSALS[how]}"


def test_chatter_in_a_read_only_chat_writes_no_activity_line(agent, harness, fake_llm):
    _restricted_group(agent, "read_only")
    sandbox_say(agent=agent, text="announcement", as_name="Bob", group="Notices")
    harness.settle()
    assert fake_llm.requests == []
    assert not ActivityEvent.objects.filter(summary__contains="cannot write").exists()


def test_a_callout_is_answered_once_the_restriction_is_lifted(agent, harness, fake_llm):
    _restricted_group(agent, "restricted")
    sandbox_say(agent=agent, text="@Wendy hello?", as_name="Bob", group="Notices")
    harness.settle()
    SandboxMember.objects.filter(user__agent=agent).update(cannot_write="")
    fake_llm.reply_with(tasks({"kind": "send", "text": "Now I can answer."}))
    sandbox_say(agent=agent, text="@Wendy and now?", as_name="Bob", group="Notices")
    harness.settle()
    assert len(fake_llm.requests) == 1
    assert Conversation.objects.get(title="Notices").cannot_write == ""


def test_an_xsend_never_starts_a_turn_where_the_account_cannot_write(agent, harness, fake_llm):
    _restricted_group(agent, "restricted")
    sandbox_say(agent=agent, text="news", as_name="Bob", group="Notices")
    sandbox_say(agent=agent, text="hi", as_name="Ann")
    fake_llm.reply_with(tasks({"kind": "send", "text": "hello"}))
    harness.settle()
    ann, notices = Conversation.objects.get(title="Ann"), Conversation.objects.get(title="Notices")
    with pytest.raises(XSendRefused, match="is a chat the account cannot write in: restricted"):
        conversation_xsend(source=ann, target_peer_id=notices.peer_id, intent="tell them", source_node_id=1)
    assert not notices.graphs.exists()
