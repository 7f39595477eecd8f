"""The OpenAPI schema of the stored records says what the handlers require: `channel_id` is required
where one conversation's entries are apart from another's (plans, notes, summaries, events), and a
boolean is not a peer id."""

from __future__ import annotations

import pytest

from api.api import api as ninja_api

PER_CHANNEL = ["notes", "plans", "summaries", "events"]
AGENT_WIDE = ["memories", "intentions", "schedule"]


def _operations(kind: str) -> dict:
    paths = ninja_api.get_openapi_schema()["paths"]
    return {
        "list": paths[f"/api/v1/agents/{{agent_id}}/records/{kind}"]["get"],
        "create": paths[f"/api/v1/agents/{{agent_id}}/records/{kind}"]["post"],
        **{
            action: paths[f"/api/v1/agents/{{agent_id}}/records/{kind}/{{entry_id}}"][method]
            for action, method in (("read", "get"), ("update", "put"), ("delete", "delete"))
        },
    }


def _query_required(operation: dict) -> bool | None:
    for parameter in operation.get("parameters", []):
        if parameter["name"] == "channel_id" and parameter["in"] == "query":
            return parameter.get("required", False)
    return None


def _body_required(operation: dict) -> bool:
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    ref = schema["$ref"].rsplit("/", 1)[-1]
    component = ninja_api.get_openapi_schema()["components"]["schemas"][ref]
    return "channel_id" in component.get("required", [])


@pytest.mark.parametrize("kind", PER_CHANNEL)
def test_per_conversation_kinds_declare_channel_id_required_where_the_handler_requires_it(kind):
    operations = _operations(kind)

    assert _body_required(operations["create"])
    assert [_query_required(operations[a]) for a in ("read", "update", "delete")] == [True, True, True]
    assert _query_required(operations["list"]) is False  # a list may span every conversation


@pytest.mark.parametrize("kind", AGENT_WIDE)
def test_agent_wide_kinds_leave_channel_id_optional(kind):
    operations = _operations(kind)

    assert not _body_required(operations["create"])
    assert [_query_required(operations[a]) for a in ("list", "read", "update", "delete")] == [False] * 4


@pytest.mark.django_db
@pytest.mark.parametrize(("kind", "value"), [("notes", False), ("notes", True), ("memories", False)])
def test_a_boolean_is_refused_as_a_channel_id(api, wendy, kind, value):
    answer = api.post(f"/agents/{wendy.pk}/records/{kind}", {"content": "x", "channel_id": value})

    assert (answer.status_code, answer.json()["field"]) == (422, "channel_id")
