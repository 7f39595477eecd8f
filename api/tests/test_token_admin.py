"""API tokens in the admin: staff manage their own, owners revoke anyone's."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django_otp.plugins.otp_totp.models import TOTPDevice

from api.models import ApiToken
from api.services.tokens import api_token_create, api_token_user
from cindy_site.testing.staff import verify_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, make_staff):
    """A verified staff user who holds no model permission."""
    user = make_staff("olivia")
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    client.force_login(user)
    verify_client(client, device)
    client.user = user
    return client


def test_staff_create_a_token_and_see_it_once(staff_client):
    answer = staff_client.post(
        "/admin/api/apitoken/add/", {"name": "fleet script", "expires_0": "", "expires_1": ""}
    )

    assert answer.status_code == 302
    token = ApiToken.objects.get()
    assert (token.user, token.name) == (staff_client.user, "fleet script")
    shown = [str(m) for m in get_messages(answer.wsgi_request) if "not shown again" in str(m)]
    raw = shown[0].rsplit(" ", 1)[-1]
    assert raw.startswith(token.prefix) and api_token_user(raw) == staff_client.user
    # Shown on the page after saving, never again.
    assert raw in staff_client.get(answer["Location"]).content.decode()
    assert raw not in staff_client.get(f"/admin/api/apitoken/{token.pk}/change/").content.decode()


def test_staff_see_and_revoke_only_their_own_tokens(staff_client, owner):
    mine, _ = api_token_create(user=staff_client.user, name="mine")
    theirs, _ = api_token_create(user=owner, name="theirs")

    page = staff_client.get("/admin/api/apitoken/").content.decode()
    assert "mine" in page and "theirs" not in page
    assert staff_client.get(f"/admin/api/apitoken/{theirs.pk}/change/").status_code == 302  # not found
    staff_client.post(
        "/admin/api/apitoken/",
        {"action": "revoke_tokens", "_selected_action": [mine.pk, theirs.pk]},
    )
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.revoked is not None, mine.revoked_by) == (True, "olivia")
    assert theirs.revoked is None


def test_owners_revoke_anyone_s_token(verified_client, make_staff):
    token, raw = api_token_create(user=make_staff("olivia"), name="hers")

    verified_client.post("/admin/api/apitoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]})

    token.refresh_from_db()
    assert token.revoked_by == "operator"
    assert api_token_user(raw) is None


def test_a_past_expiry_is_refused_with_the_fix(staff_client):
    answer = staff_client.post(
        "/admin/api/apitoken/add/", {"name": "old", "expires_0": "2001-01-01", "expires_1": "10:00:00"}
    )
    assert answer.status_code == 200
    assert "in the past: give a future date" in answer.content.decode()
    assert not ApiToken.objects.exists()
