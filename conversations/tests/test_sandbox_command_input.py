from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from conversations.models import SandboxMessage

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
