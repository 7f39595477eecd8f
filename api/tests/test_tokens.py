"""API tokens: made once and stored as a digest, refused when revoked, expired or no longer staff."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from api.models import ApiToken
from api.services.tokens import api_token_create, api_token_revoke, token_digest

pytestmark = pytest.mark.django_db


def _apitoken(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("apitoken", *args, stdout=out, stderr=err)
    return out.getvalue().strip()


def test_apitoken_prints_a_token_once_and_stores_only_its_digest(owner, wendy, client, clock):
    raw = _apitoken("owner", "--name", "backups")

    token = ApiToken.objects.get()
    assert (token.user, token.name) == (owner, "backups")
    assert token.digest == token_digest(raw) and raw not in (token.digest, token.prefix)
    assert raw.startswith(token.prefix)
    answer = client.get("/api/v1/agents", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200
    assert [a["name"] for a in answer.json()["items"]] == ["Wendy"]
    token.refresh_from_db()
    assert token.last_used == clock.now()


def test_apitoken_can_make_a_token_that_expires(owner, clock):
    _apitoken("owner", "--days", "30")
    assert ApiToken.objects.get().expires == clock.now() + dt.timedelta(days=30)
    with pytest.raises(CommandError, match="--days is 0"):
        _apitoken("owner", "--days", "0")


def test_apitoken_refuses_unknown_users_and_non_staff(django_user_model):
    django_user_model.objects.create_user("visitor", password="pw")
    with pytest.raises(CommandError, match='no user is named "nobody"'):
        _apitoken("nobody")
    with pytest.raises(CommandError, match="visitor is not active staff"):
        _apitoken("visitor")
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer cindy_not-a-token", "Token cindy_x", "Basic b3duZXI6cHc="],
)
def test_requests_without_a_valid_token_get_401(api_as, wendy, client, header):
    headers = {"Authorization": header} if header else {}
    answer = client.get("/api/v1/agents", headers=headers)
    assert answer.status_code == 401
    assert "Bearer TOKEN" in answer.json()["detail"]
    assert answer["WWW-Authenticate"].startswith("Bearer")


def test_a_signed_in_session_is_not_enough(verified_client, wendy):
    """The API takes no cookies, so it needs no CSRF protection: a browser session gets 401."""
    assert verified_client.get("/api/v1/agents").status_code == 401
    assert verified_client.post(f"/api/v1/agents/{wendy.pk}/disable").status_code == 401


def test_revoked_and_expired_tokens_are_refused(owner, api_as, wendy, clock):
    revoked, expiring = api_as(owner), api_as(owner)
    api_token_revoke(token=ApiToken.objects.get(digest=token_digest(revoked.token)), by="owner")
    ApiToken.objects.filter(digest=token_digest(expiring.token)).update(
        expires=clock.now() + dt.timedelta(hours=1)
    )

    assert revoked.get("/agents").status_code == 401
    assert expiring.get("/agents").status_code == 200
    clock.advance(3600)
    assert expiring.get("/agents").status_code == 401


def test_a_token_stops_working_when_its_user_is_no_longer_active_staff(make_staff, api_as, wendy):
    user = make_staff("olivia", "agents.view_agent")
    api = api_as(user)
    assert api.get("/agents").status_code == 200

    user.is_staff = False
    user.save()
    assert api.get("/agents").status_code == 401

    user.is_staff, user.is_active = True, False
    user.save()
    assert api.get("/agents").status_code == 401


def test_the_schema_is_served_without_a_token(client):
    answer = client.get("/api/v1/openapi.json")
    assert answer.status_code == 200
    schema = answer.json()
    assert schema["info"]["title"] == "Cindy API"
    # Each record kind has its own operations (and so its own path) since the per-kind records API.
    assert "/api/v1/agents/{agent_id}/records/notes" in schema["paths"]


def test_writes_need_no_csrf_token(owner, wendy):
    _, raw = api_token_create(user=owner, name="script")
    strict = Client(enforce_csrf_checks=True)
    answer = strict.post(f"/api/v1/agents/{wendy.pk}/disable", headers={"Authorization": f"Bearer {raw}"})
    assert answer.status_code == 200
