"""The Telegram account page offers the agent's library photos as a new profile photo: choosing one
writes the same gateway request as an upload, naming the library item."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent, GatewayRequest, Transport
from media_catalog.models import LibraryItem

pytestmark = pytest.mark.django_db


@pytest.fixture
def wendy(db):
    return Agent.objects.create(
        name="Wendy", phone="+15550001", instructions="x", transport=Transport.SANDBOX
    )


def account_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_telegram", args=[agent.pk])


def test_the_page_offers_only_photos_the_agent_can_use(verified_client, wendy):
    other = Agent.objects.create(
        name="Orla", phone="+15550003", instructions="x", transport=Transport.SANDBOX
    )
    LibraryItem.objects.create(
        agent=wendy, unique_id="libgoat", kind="photo", file="1/goat.png", description="Goats"
    )
    LibraryItem.objects.create(agent=wendy, unique_id="AgADhut", kind="photo", saved_message_id=12)
    LibraryItem.objects.create(agent=wendy, unique_id="libsong", kind="audio", file="1/song.ogg")
    LibraryItem.objects.create(agent=wendy, unique_id="libnofile", kind="photo")
    LibraryItem.objects.create(agent=other, unique_id="liborla", kind="photo", file="2/orla.png")

    page = verified_client.get(account_url(wendy)).content.decode()

    assert 'id="library-photo-form"' in page
    assert "libgoat: Goats" in page and "AgADhut" in page
    for absent in ("libsong", "libnofile", "liborla"):
        assert absent not in page


def test_choosing_a_library_photo_asks_the_gateway_as_an_upload_does(verified_client, wendy):
    LibraryItem.objects.create(agent=wendy, unique_id="libgoat", kind="photo", file="1/goat.png")

    response = verified_client.post(
        account_url(wendy), {"action": "library_photo", "library-unique_id": "libgoat"}
    )

    assert response.status_code == 302
    request = GatewayRequest.objects.get(kind=GatewayRequest.Kind.ADD_PROFILE_PHOTO)
    assert (request.agent, request.params) == (wendy, {"library": "libgoat"})


def test_an_item_not_offered_is_refused_on_the_form(verified_client, wendy):
    LibraryItem.objects.create(agent=wendy, unique_id="libsong", kind="audio", file="1/song.ogg")

    page = verified_client.post(
        account_url(wendy), {"action": "library_photo", "library-unique_id": "libsong"}
    ).content.decode()

    assert "Select a valid choice. libsong is not one of the available choices." in page
    assert not GatewayRequest.objects.exists()


def test_without_library_photos_the_page_says_so(verified_client, wendy):
    page = verified_client.get(account_url(wendy)).content.decode()

    assert "has no photo to use as a profile photo" in page
    assert 'id="library-photo-form"' not in page
