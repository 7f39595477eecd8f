"""The sandbox transport's `save_to_library`: the message's media part goes to the account's Saved
Messages (its DM with itself) once; a message or media that is not there is refused."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from conversations.transport.base import PermanentError
from engine.transports import transport_for
from sandbox.models import SandboxMessage
from sandbox.services.chats import (
    sandbox_person,
    sandbox_saved_chat,
    sandbox_say,
    sandbox_user_for_agent,
)

pytestmark = pytest.mark.django_db

PHOTO = {
    "kind": "media",
    "media_kind": "photo",
    "unique_id": "P7",
    "mime": "image/jpeg",
    "file": "sandbox/p7.jpg",
}


def test_a_photo_goes_to_saved_messages_once(agent, clock):
    said = sandbox_say(agent=agent, text="look", media=[PHOTO])
    transport = transport_for(agent)
    async_to_sync(transport.connect)()
    you = sandbox_person(name="You")
    first = async_to_sync(transport.save_to_library)(you.user_id, said.message_id, "P7")
    again = async_to_sync(transport.save_to_library)(you.user_id, said.message_id, "P7")
    assert (first.already, again.already) == (False, True)
    assert first.item.saved_message_id == again.item.saved_message_id
    assert (first.item.unique_id, first.item.media_kind, first.item.mime) == ("P7", "photo", "image/jpeg")
    saved = SandboxMessage.objects.filter(chat=sandbox_saved_chat(user=sandbox_user_for_agent(agent=agent)))
    assert [m.media[0]["unique_id"] for m in saved] == ["P7"]

    with pytest.raises(PermanentError, match="does not hold media P8") as wrong:
        async_to_sync(transport.save_to_library)(you.user_id, said.message_id, "P8")
    assert wrong.value.reason == "MEDIA_NOT_FOUND"
    with pytest.raises(PermanentError, match="has no message 999"):
        async_to_sync(transport.save_to_library)(you.user_id, 999, "P7")
    assert saved.count() == 1
