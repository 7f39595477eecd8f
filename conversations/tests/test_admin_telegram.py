"""The conversation admin's Telegram side: a mute set here is sent to Telegram, groups are left
through the gateway, and each request's outcome shows on the conversation's page."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import GatewayRequest
from cindy_site.clock import now
from conversations.models import Conversation

pytestmark = pytest.mark.django_db
Kind = GatewayRequest.Kind


@pytest.fixture
def dm(agent):
    return Conversation.objects.create(agent=agent, peer_id=501, kind="dm", title="Ann")


@pytest.fixture
def group(agent):
    return Conversation.objects.create(agent=agent, peer_id=-77, kind="group", title="Book club")


#: The change form's inline management forms (read-only inlines, none submitted).
INLINES = {f"{p}-{k}": "0" for p in ("nodes", "messages") for k in ("TOTAL_FORMS", "INITIAL_FORMS")}


def change_url(conversation: Conversation) -> str:
    return reverse("admin:conversations_conversation_change", args=[conversation.pk])


def test_muting_in_the_form_asks_the_gateway_to_mute_in_telegram(verified_client, dm):
    response = verified_client.post(change_url(dm), {"muted": "on", "llm_model": "", **INLINES}, follow=True)
    assert "no gateway holds Wendy now" in response.content.decode()
    dm.refresh_from_db()
    assert dm.muted
    request = GatewayRequest.objects.get()
    assert (request.kind, request.params) == (Kind.SET_MUTED, {"peer_id": 501, "muted": True})


def test_an_unchanged_mute_sends_nothing(verified_client, dm):
    response = verified_client.post(change_url(dm), {"llm_model": "", **INLINES})
    assert response.status_code == 302
    assert not GatewayRequest.objects.exists()


def test_the_leave_action_asks_for_groups_and_refuses_private_chats(verified_client, dm, group):
    url = reverse("admin:conversations_conversation_changelist")
    data = {"action": "leave_in_telegram", "_selected_action": [dm.pk, group.pk]}
    page = verified_client.post(url, data, follow=True).content.decode()
    assert "Asked the gateway to leave 1 chat(s)." in page
    assert "only groups and channels can be left" in page
    assert GatewayRequest.objects.get().params == {"peer_id": -77}


def test_the_page_lists_this_chats_requests_with_their_outcome(verified_client, dm, agent):
    GatewayRequest.objects.create(
        agent=agent,
        kind=Kind.SET_MUTED,
        params={"peer_id": 501, "muted": True},
        status=GatewayRequest.Status.FAILED,
        error="Telegram refused: PEER_ID_INVALID",
        created=now(),
    )
    GatewayRequest.objects.create(
        agent=agent, kind=Kind.SET_MUTED, params={"peer_id": 999, "muted": True}, created=now()
    )
    page = verified_client.get(change_url(dm)).content.decode()
    assert "Mute chat 501 · request failed: Telegram refused: PEER_ID_INVALID" in page
    assert "chat 999" not in page
