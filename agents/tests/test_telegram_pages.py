"""The agent's Telegram account and sign-in pages: what an operator types becomes a gateway request,
bad input is refused on the form, and a request's outcome shows on the page."""

from __future__ import annotations

import io

import pytest
from django.urls import reverse
from PIL import Image

from agents.models import Agent, GatewayRequest, Transport
from cindy_site.clock import now

pytestmark = pytest.mark.django_db
Kind = GatewayRequest.Kind


@pytest.fixture
def wendy(db):
    return Agent.objects.create(
        name="Wendy", phone="+15550001", instructions="x", transport=Transport.SANDBOX
    )


@pytest.fixture
def heidi(db):
    return Agent.objects.create(
        name="Heidi", phone="+15550002", instructions="x", transport=Transport.TELEGRAM
    )


def account_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_telegram", args=[agent.pk])


def signin_url(agent: Agent) -> str:
    return reverse("admin:agents_agent_signin", args=[agent.pk])


def test_the_account_page_shows_the_last_read_profile_and_contacts(verified_client, wendy):
    GatewayRequest.objects.create(
        agent=wendy,
        kind=Kind.READ_ACCOUNT,
        status=GatewayRequest.Status.DONE,
        created=now(),
        finished=now(),
        result={
            "profile": {
                "user_id": 9,
                "first_name": "Wendy",
                "last_name": "W",
                "username": "wendy_w",
                "about": "Likes <b>tea</b>",
                "about_limit": 70,
                "photos": [],
            },
            "contacts": [
                {
                    "user_id": 77,
                    "first_name": "Bob",
                    "last_name": "",
                    "username": "bobby_b",
                    "phone": "",
                    "mutual": True,
                }
            ],
        },
    )
    page = verified_client.get(account_url(wendy)).content.decode()
    assert "Likes &lt;b&gt;tea&lt;/b&gt;" in page  # text, not markup
    assert "@bobby_b" in page and 'value="wendy_w"' in page
    assert "Waiting for the gateway" not in page


def test_a_profile_change_becomes_a_request_and_a_long_bio_is_refused(verified_client, wendy):
    data = {
        "action": "profile",
        "profile-first_name": "Wendy",
        "profile-username": "wendy_w",
        "profile-about": "x" * 71,
    }
    page = verified_client.post(account_url(wendy), data).content.decode()
    assert "the bio has 71 characters; Telegram allows 70" in page
    assert not GatewayRequest.objects.exists()
    data["profile-about"] = "Short bio"
    response = verified_client.post(account_url(wendy), data)
    assert response.status_code == 302
    request = GatewayRequest.objects.get()
    assert (request.kind, request.params["about"], request.params["username"]) == (
        Kind.UPDATE_PROFILE,
        "Short bio",
        "wendy_w",
    )
    page = verified_client.get(account_url(wendy)).content.decode()
    assert "Waiting for the gateway" in page and 'http-equiv="refresh"' in page


def _finished_right_after(read, request: GatewayRequest, result: dict):
    """`read`, after which the gateway finishes `request`: the moment a page's reads straddle."""

    def wrapped(**kwargs):
        value = read(**kwargs)
        GatewayRequest.objects.filter(pk=request.pk).update(
            status=GatewayRequest.Status.DONE, result=result, finished=now()
        )
        return value

    return wrapped


def test_a_request_that_finishes_while_the_page_renders_still_reaches_the_page(
    verified_client, wendy, heidi, monkeypatch
):
    """The page either shows the result or reloads itself until it does, never neither."""
    from agents import selectors
    from agents.services import telegram_requests

    read = GatewayRequest.objects.create(agent=wendy, kind=Kind.READ_ACCOUNT, created=now())
    profile = {"user_id": 9, "first_name": "Wendy", "about": "Reads maps", "about_limit": 70}
    monkeypatch.setattr(
        selectors,
        "account_snapshot",
        _finished_right_after(selectors.account_snapshot, read, {"profile": profile, "contacts": []}),
    )
    page = verified_client.get(account_url(wendy)).content.decode()
    assert 'http-equiv="refresh"' in page
    assert "Reads maps" in verified_client.get(account_url(wendy)).content.decode()

    start = GatewayRequest.objects.create(agent=heidi, kind=Kind.SIGN_IN_START, created=now())
    monkeypatch.setattr(
        telegram_requests,
        "signin_latest",
        _finished_right_after(telegram_requests.signin_latest, start, {"state": "code_sent", "via": "App"}),
    )
    page = verified_client.get(signin_url(heidi)).content.decode()
    assert 'http-equiv="refresh"' in page
    assert "Telegram sent a code (App)" in verified_client.get(signin_url(heidi)).content.decode()


def test_a_failed_request_shows_its_reason(verified_client, wendy):
    GatewayRequest.objects.create(
        agent=wendy,
        kind=Kind.JOIN_CHAT,
        params={"target": "@nope_group"},
        status=GatewayRequest.Status.FAILED,
        error="Telegram refused: USERNAME_NOT_OCCUPIED",
        created=now(),
        finished=now(),
    )
    page = verified_client.get(account_url(wendy)).content.decode()
    assert "Join @nope_group" in page
    assert "Request failed:</strong> Telegram refused: USERNAME_NOT_OCCUPIED" in page


def test_a_join_target_that_is_no_chat_is_refused_on_the_form(verified_client, wendy):
    page = verified_client.post(
        account_url(wendy), {"action": "join", "join-target": "hello there"}
    ).content.decode()
    assert "is not a chat to join" in page
    assert not GatewayRequest.objects.exists()


def test_an_uploaded_photo_is_stored_for_the_gateway(verified_client, wendy, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(buffer, "PNG")
    buffer.name = "me.png"
    buffer.seek(0)
    assert (
        verified_client.post(account_url(wendy), {"action": "photo", "photo-photo": buffer}).status_code
        == 302
    )
    request = GatewayRequest.objects.get(kind=Kind.ADD_PROFILE_PHOTO)
    assert (tmp_path / request.params["file"]).read_bytes()[:4] == b"\x89PNG"

    text = io.BytesIO(b"<html>not a picture</html>")
    text.name = "evil.png"
    page = verified_client.post(account_url(wendy), {"action": "photo", "photo-photo": text}).content.decode()
    assert "evil.png is not a JPEG or PNG picture" in page


def test_a_saved_profile_photo_is_served_only_as_an_image(verified_client, wendy, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    folder = tmp_path / "profile_photos" / str(wendy.pk)
    folder.mkdir(parents=True)
    Image.new("RGB", (8, 8), "blue").save(folder / "5.jpg", "JPEG")
    (folder / "6.jpg").write_bytes(b"<script>alert(1)</script>")
    url = reverse("admin:agents_agent_profile_photo", args=[wendy.pk, "5.jpg"])
    response = verified_client.get(url)
    assert response["Content-Type"] == "image/jpeg" and response["X-Content-Type-Options"] == "nosniff"
    assert (
        verified_client.get(reverse("admin:agents_agent_profile_photo", args=[wendy.pk, "6.jpg"])).status_code
        == 404
    )


def test_the_sign_in_page_walks_code_then_password_and_never_shows_them(verified_client, heidi):
    page = verified_client.get(signin_url(heidi)).content.decode()
    assert "Start by asking Telegram for a code" in page
    assert verified_client.post(signin_url(heidi), {"action": "start"}).status_code == 302
    start = GatewayRequest.objects.get(kind=Kind.SIGN_IN_START)
    GatewayRequest.objects.filter(pk=start.pk).update(
        status=GatewayRequest.Status.DONE,
        result={"state": "code_sent", "phone_code_hash": "h", "via": "App"},
        finished=now(),
    )
    page = verified_client.get(signin_url(heidi)).content.decode()
    assert "Telegram sent a code (App)" in page
    verified_client.post(signin_url(heidi), {"action": "code", "code-code": "12 345"})
    code = GatewayRequest.objects.get(kind=Kind.SIGN_IN_CODE)
    assert code.params == {"code": "12345", "phone_code_hash": "h"}
    page = verified_client.get(signin_url(heidi)).content.decode()
    assert "12345" not in page
    admin_page = verified_client.get(
        reverse("admin:agents_gatewayrequest_change", args=[code.pk])
    ).content.decode()
    assert "12345" not in admin_page and "(hidden)" in admin_page


def test_a_sandbox_agent_needs_no_sign_in(verified_client, wendy):
    page = verified_client.get(signin_url(wendy)).content.decode()
    assert "runs on the sandbox, which needs no sign-in" in page
