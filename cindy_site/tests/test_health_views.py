"""The web process's health endpoints."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_live_answers_without_a_login_and_without_an_https_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    response = client.get("/health/live")
    assert (response.status_code, response.content) == (200, b"live\n")


def test_ready_answers_when_the_database_does(client, settings):
    settings.REDIS_URL = ""
    response = client.get("/health/ready")
    assert (response.status_code, response.content) == (200, b"ready\n")


def test_ready_is_refused_with_the_reason_when_redis_does_not_answer(client, settings):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/health/ready")
    assert response.status_code == 503
    assert response.content.decode().startswith("not ready: Redis at REDIS_URL does not answer:")
