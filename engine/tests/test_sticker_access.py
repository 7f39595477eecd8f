"""What the account may send beyond its sets: premium stickers only with Telegram Premium, and the
stickers it keeps in its Saved Messages join its sticker list."""

from __future__ import annotations

import pytest

from conversations.transport.base import StickerRef, StickerSetInfo
from engine.handlers.sticker import catalog_sticker
from engine.tests.harness import Harness
from llm.prompt.sections import sticker_section
from media_catalog.models import LibraryItem, Sticker, StickerAccess
from media_catalog.selectors import may_send_premium, saved_stickers_of
from sandbox.services.chats import sandbox_save
from sandbox.transport.transport import SandboxTransport

pytestmark = pytest.mark.django_db


class TelegramLikeSets(SandboxTransport):
    """The sandbox, with sets resolved as Telegram would: one premium sticker, and a second set."""

    sets = {
        "GnomeParty": [("🌷", "G1", False), ("🎩", "G2", True)],
        "KeptSet": [("🦔", "K1", False)],
    }

    async def resolve_sticker_set(self, short_name):
        refs = tuple(
            StickerRef(short_name, name, uid, ref={"document_id": 50 + i, "mime": "image/webp", "premium": p})
            for i, (name, uid, p) in enumerate(self.sets[short_name])
        )
        return StickerSetInfo(short_name=short_name, title=short_name, stickers=refs)


@pytest.fixture
def harness(agent, clock):
    agent.sticker_set_names = ["GnomeParty"]
    agent.save()
    return Harness(
        clock, transport_factory=lambda a, gateway_id="": TelegramLikeSets(a, gateway_id=gateway_id)
    )


def test_a_premium_sticker_is_not_offered_to_an_account_without_premium(agent, harness):
    harness.start()  # the sandbox account reports no Premium on connect
    harness.step("stickers")

    assert Sticker.objects.get(unique_id="G2").premium is True
    assert StickerAccess.objects.get(agent=agent).premium is False  # recorded on connect
    assert may_send_premium(agent_id=agent.pk) is False
    section = sticker_section(agent)
    assert "- GnomeParty :: 🌷" in section
    assert "🎩" not in section

    StickerAccess.objects.filter(agent=agent).update(premium=True)
    assert "- GnomeParty :: 🎩" in sticker_section(agent)


def test_a_sticker_in_saved_messages_joins_the_sticker_list_and_can_be_sent(agent, harness):
    sticker = {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": "K1",
        "sticker_set_name": "KeptSet",
        "sticker_name": "🦔",
        "mime": "image/webp",
    }
    sandbox_save(agent=agent, media=[sticker])
    harness.start()

    assert harness.refresh("library") is True
    assert saved_stickers_of(agent_id=agent.pk) == [{"set": "KeptSet", "name": "🦔", "unique_id": "K1"}]
    assert not LibraryItem.objects.filter(agent=agent, unique_id="K1").exists()  # a sticker, not a photo
    harness.step("stickers")  # the saved sticker's set is imported so the sticker can be sent

    assert "- KeptSet :: 🦔" in sticker_section(agent)
    ref = catalog_sticker(agent, "KeptSet", "🦔")
    assert ref is not None and ref.unique_id == "K1"
    assert catalog_sticker(agent, "KeptSet", "🐻") is None  # not saved, not configured


def test_a_premium_sticker_kept_in_saved_messages_is_not_offered_either(agent, harness):
    sandbox_save(
        agent=agent,
        media=[
            {
                "kind": "media",
                "media_kind": "sticker",
                "unique_id": "G2",
                "sticker_set_name": "GnomeParty",
                "sticker_name": "🎩",
            }
        ],
    )
    harness.start()
    harness.refresh("library")
    harness.step("stickers")

    assert "🎩" not in sticker_section(agent)
