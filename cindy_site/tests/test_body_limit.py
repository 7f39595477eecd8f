"""Request bodies are refused by size: at the ASGI layer before they are read (by Content-Length, and
while streaming when there is none), and Django's own limit on form and JSON data answers 413, not a
500 or a 400, on the API and on the web forms."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from asgiref.testing import ApplicationCommunicator
from django.conf import settings as django_settings

from api.services.tokens import api_token_create
from cindy_site.asgi import application
from cindy_site.body_limit import BodySizeLimit

LIMIT = 1000


def _scope(path: str, headers: list[tuple[bytes, bytes]]) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), *headers],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


async def _exchange(app, scope: dict, chunks: list[bytes]) -> tuple[int, bytes]:
    communicator = ApplicationCommunicator(app, scope)
    for index, chunk in enumerate(chunks):
        await communicator.send_input(
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        )
    start = await communicator.receive_output(timeout=10)
    body = await communicator.receive_output(timeout=10)
    await communicator.wait(timeout=10)
    return start["status"], body["body"]


def _answer(app, scope: dict, chunks: list[bytes]) -> tuple[int, bytes]:
    return async_to_sync(_exchange)(app, scope, chunks)


class _Recorder:
    """An inner app that reads the whole body and answers 200, noting what it was given."""

    def __init__(self) -> None:
        self.called = False
        self.received = 0

    async def __call__(self, scope, receive, send) -> None:
        self.called = True
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            self.received += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read"})


def test_a_declared_length_over_the_limit_is_refused_before_the_app_runs(settings):
    settings.CINDY_MAX_REQUEST_BODY_BYTES = LIMIT
    inner = _Recorder()

    status, body = _answer(
        BodySizeLimit(inner), _scope("/anything/", [(b"content-length", b"1001")]), [b"x" * 10]
    )

    assert status == 413 and b"1,000 bytes" in body
    assert not inner.called


def test_a_streamed_body_without_a_length_is_cut_off_when_it_passes_the_limit(settings):
    settings.CINDY_MAX_REQUEST_BODY_BYTES = LIMIT
    inner = _Recorder()

    status, body = _answer(
        BodySizeLimit(inner), _scope("/anything/", []), [b"x" * 600, b"x" * 600, b"x" * 600]
    )

    assert status == 413
    assert inner.received <= 600  # the chunk that went past the limit never reached the app


def test_a_body_within_the_limit_reaches_the_app_whole(settings):
    settings.CINDY_MAX_REQUEST_BODY_BYTES = LIMIT
    inner = _Recorder()

    status, body = _answer(
        BodySizeLimit(inner), _scope("/anything/", [(b"content-length", b"1000")]), [b"x" * 500, b"x" * 500]
    )

    assert (status, body, inner.received) == (200, b"read", 1000)


@pytest.mark.parametrize(
    "path", ["/api/v1/agents/1/enable", "/admin/login/", "/dashboard/", "/no-such-page/"]
)
def test_the_site_answers_413_on_every_route(settings, path):
    settings.CINDY_MAX_REQUEST_BODY_BYTES = LIMIT

    status, _ = _answer(application, _scope(path, [(b"content-length", b"5000000")]), [b"x"])

    assert status == 413


@pytest.mark.django_db
def test_json_over_djangos_data_limit_answers_413_on_the_api(client, settings, django_user_model):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    owner = django_user_model.objects.create_superuser("owner", "owner@example.com", "pw")
    _, token = api_token_create(user=owner, name="tests")

    answer = client.post(
        "/api/v1/agents/1/sandbox/messages",
        json.dumps({"text": "x" * 5000}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )

    assert answer.status_code == 413
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" not in answer.content.decode()  # no settings names, no traceback
    assert answer.json()["detail"].startswith("the request body is too large")


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/admin/login/", "/dashboard/"])
def test_a_form_over_djangos_data_limit_answers_413_on_the_web(client, settings, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT

    answer = client.post(path, {"username": "x" * 5000, "password": "pw"})

    assert answer.status_code == 413
    assert b"too large" in answer.content


def test_uploads_past_a_small_size_are_streamed_to_a_temporary_file():
    assert django_settings.FILE_UPLOAD_MAX_MEMORY_SIZE <= 512 * 1024
    assert (
        django_settings.FILE_UPLOAD_HANDLERS[-1]
        == "django.core.files.uploadhandler.TemporaryFileUploadHandler"
    )
