"""The API's cast: an owner (superuser), staff with chosen permissions, their tokens, and two agents."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from agents.models import AgentGrant
from api.services.tokens import api_token_create
from engine.tests.cast import make_agent


class ApiClient:
    """The Django test client with `Authorization: Bearer TOKEN` on every request and JSON bodies."""

    def __init__(self, client, token: str | None) -> None:
        self.client, self.token = client, token

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def get(self, path: str, **params):
        return self.client.get(f"/api/v1{path}", params, headers=self._headers())

    def post(self, path: str, body: dict | None = None):
        return self.client.post(
            f"/api/v1{path}", body or {}, content_type="application/json", headers=self._headers()
        )

    def put(self, path: str, body: dict):
        return self.client.put(
            f"/api/v1{path}", body, content_type="application/json", headers=self._headers()
        )

    def patch(self, path: str, body: dict):
        return self.client.patch(
            f"/api/v1{path}", body, content_type="application/json", headers=self._headers()
        )

    def delete(self, path: str):
        return self.client.delete(f"/api/v1{path}", headers=self._headers())


@pytest.fixture
def wendy(db):
    return make_agent("Wendy")


@pytest.fixture
def heidi(db):
    return make_agent("Heidi", phone="+15550000002")


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_superuser("owner", "owner@example.com", "pw")


@pytest.fixture
def make_staff(django_user_model):
    def make(username: str, *perms: str, agents: list | None = None):
        """Staff holding `perms`, granted every agent, or only `agents` when given."""
        user = django_user_model.objects.create_user(username, password="pw", is_staff=True)
        for agent in agents if agents is not None else [None]:
            AgentGrant.objects.create(user=user, agent=agent)
        for perm in perms:
            app_label, codename = perm.split(".")
            user.user_permissions.add(
                Permission.objects.get(content_type__app_label=app_label, codename=codename)
            )
        return django_user_model.objects.get(pk=user.pk)

    return make


@pytest.fixture
def api_as(client):
    """`api_as(user)`: an ApiClient with a new token of `user` (or `api_as(None)`: no token)."""

    def make(user) -> ApiClient:
        if user is None:
            return ApiClient(client, None)
        _, raw = api_token_create(user=user, name="tests")
        return ApiClient(client, raw)

    return make


@pytest.fixture
def api(api_as, owner):
    """The owner's client: every permission on every agent."""
    return api_as(owner)
