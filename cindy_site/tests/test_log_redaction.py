"""No credential reaches a log line, at any level: the site's own logging configuration (settings
LOGGING) is applied at DEBUG with its console handler writing to a buffer, requests are sent with
every kind of Authorization header, and everything written is scanned."""

from __future__ import annotations

import base64
import copy
import io
import logging
import logging.config

import pytest
from django.conf import settings as django_settings

from api.services.tokens import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db

GARBAGE = "s3cr3t-garbage-credential-0123456789"


@pytest.fixture
def every_line(settings):
    """Everything the configured handlers write, with every logger at DEBUG and DEBUG on (django-ninja
    logs an unexpected Authorization header only then)."""
    settings.DEBUG = True
    stream = io.StringIO()
    config = copy.deepcopy(django_settings.LOGGING)
    for handler in config["handlers"].values():
        handler["stream"] = stream
    config["root"]["level"] = "DEBUG"
    for logger in config["loggers"].values():
        logger["level"] = "DEBUG"
    logging.config.dictConfig(config)
    try:
        yield stream
    finally:
        logging.config.dictConfig(django_settings.LOGGING)


@pytest.fixture
def tokens(django_user_model):
    owner = django_user_model.objects.create_superuser("owner", "owner@example.com", "pw")
    _, live = api_token_create(user=owner, name="live")
    revoked_row, revoked = api_token_create(user=owner, name="old")
    api_token_revoke(token=revoked_row, by="owner")
    return live, revoked


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def test_no_authorization_value_or_token_is_written_whatever_the_scheme(client, every_line, tokens):
    live, revoked = tokens
    headers = [
        f"Bearer {live}",
        f"Bearer {revoked}",
        f"bearer  {live}",
        f"Basic {_basic('owner', live)}",
        f"Basic {live}",
        f"Token {live}",
        f"Digest username=owner, response={live}",
        live,
        GARBAGE,
        f"Weird {GARBAGE}",
    ]

    for value in headers:
        client.get("/api/v1/agents", headers={"Authorization": value})
        client.post("/api/v1/agents/1/enable", headers={"Authorization": value})
    logging.getLogger("cindy.test").debug("the client sent Authorization: Bearer %s", live)
    logging.getLogger("django.request").warning("headers %r", {"HTTP_AUTHORIZATION": f"Token {live}"})
    try:
        raise ValueError(f"bad token {revoked}")
    except ValueError:
        logging.getLogger("cindy.test").exception("while checking %s", f"Basic {_basic('a', GARBAGE)}")

    written = every_line.getvalue()
    assert "Unexpected auth" in written  # django-ninja's line about a non-Bearer header was written...
    assert "bad token" in written and "Traceback" in written  # ...and so were the lines above
    for secret in (
        live,
        revoked,
        live[len("cindy_") :],
        _basic("owner", live),
        GARBAGE,
        _basic("a", GARBAGE),
    ):
        assert secret not in written
    assert "[redacted]" in written


def test_ordinary_lines_are_left_alone(every_line):
    logging.getLogger("cindy.test").info(
        "agent %s answered (%s), token count %d, Basic plan", "Wendy", "cindy_site", 12
    )

    assert "agent Wendy answered (cindy_site), token count 12, Basic plan" in every_line.getvalue()


def test_every_configured_handler_carries_the_filter():
    handlers = django_settings.LOGGING["handlers"]
    assert handlers and all("redact_credentials" in h.get("filters", []) for h in handlers.values())
