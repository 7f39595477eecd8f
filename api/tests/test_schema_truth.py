"""Where the served schema and the answers once disagreed: each answer a route gives is declared
with the schema it has, and a boolean is never read as an id."""

from __future__ import annotations

import pytest

from api.api import api as ninja_api
from conversations.models import Conversation, Message


def _responses(path: str, method: str) -> dict:
    return ninja_api.get_openapi_schema()["paths"][f"/api/v1{path}"][method]["responses"]


@pytest.mark.django_db
def test_a_reply_to_a_missing_message_is_a_declared_422_naming_reply_to(api, wendy):
    answer = api.post(
        f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi", "as_name": "Ann", "reply_to": 999}
    )

    assert (answer.status_code, answer.json()["field"]) == (422, "reply_to")
    assert 422 in _responses("/agents/{agent_id}/sandbox/messages", "post")


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["reply_to", "chat_id"])
@pytest.mark.parametrize("value", [True, False])
def test_a_boolean_is_refused_as_a_sandbox_id_by_the_schema(api, wendy, name, value):
    answer = api.post(f"/agents/{wendy.pk}/sandbox/messages", {"text": "hi", "as_name": "Ann", name: value})

    assert (answer.status_code, answer.json()["field"]) == (422, name)
    assert answer.json()["detail"][0]["type"] == "int_type"  # the schema's refusal, not a lookup's


@pytest.mark.django_db
def test_a_boolean_is_refused_as_a_record_s_numeric_field(api, wendy, clock):
    Conversation.objects.create(agent=wendy, peer_id=1001, kind="dm", title="Ann")
    Message.objects.create(conversation=Conversation.objects.get(), message_id=1, date=clock.now(), text="hi")
    answer = api.post(
        f"/agents/{wendy.pk}/records/summaries",
        {"content": "x", "channel_id": 1001, "fields": {"min_message_id": True, "max_message_id": 1}},
    )

    assert answer.status_code == 422
    assert answer.json()["field"].startswith("fields.min_message_id")


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["notes", "summaries"])
def test_a_per_conversation_read_without_channel_id_is_a_declared_422(api, wendy, kind):
    answer = api.get(f"/agents/{wendy.pk}/records/{kind}/some-id")
    parameters = ninja_api.get_openapi_schema()["paths"][
        f"/api/v1/agents/{{agent_id}}/records/{kind}/{{entry_id}}"
    ]

    assert (answer.status_code, answer.json()["field"]) == (422, "channel_id")
    assert {p["name"]: p.get("required") for p in parameters["get"]["parameters"]}["channel_id"] is True
    assert 422 in parameters["get"]["responses"]
