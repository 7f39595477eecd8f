from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from sandbox.models import SandboxMember, SandboxMessage

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_say_refuses_whitespace_only_text(agent, clock, text):
    with pytest.raises(CommandError, match="the text is empty or only whitespace: write something to send"):
        call_command("sandbox", "say", "Wendy", text)
    assert not SandboxMessage.objects.exists()


def test_say_refuses_a_message_longer_than_telegram_allows(agent, clock):
    with pytest.raises(CommandError, match=r"TEXT 2 is 4,097 characters; Telegram accepts at most 4,096"):
        call_command("sandbox", "say", "Wendy", "first", "x" * 4097)
    assert not SandboxMessage.objects.exists()  # nothing is sent when any text is refused


def test_say_accepts_a_message_of_exactly_the_limit(agent, clock):
    call_command("sandbox", "say", "Wendy", "x" * 4096)
    assert SandboxMessage.objects.get().text == "x" * 4096


def test_rights_sets_and_lifts_what_the_agent_may_do_in_a_group(agent, clock):
    call_command("sandbox", "say", "Wendy", "hello", "--as", "Bob", "--group", "Notices")
    call_command("sandbox", "rights", "Wendy", "--group", "Notices", "--cannot-write", "read_only")
    member = SandboxMember.objects.get(user__agent=agent)
    assert member.cannot_write == "read_only"
    call_command("sandbox", "rights", "Wendy", "--group", "Notices", "--cannot-write", "none")
    member.refresh_from_db()
    assert member.cannot_write == ""


def test_rights_in_a_group_the_agent_is_not_in_is_refused(agent, clock):
    with pytest.raises(
        CommandError, match="Wendy is in no sandbox group titled 'Nowhere': say something there"
    ):
        call_command("sandbox", "rights", "Wendy", "--group", "Nowhere", "--cannot-write", "banned")
