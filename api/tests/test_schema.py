"""Every operation of the served OpenAPI schema, exercised by schemathesis as a superuser, with every
check it has (as `st run --checks all`), and statefully along the schema's links.

Stateless: each operation with generated valid and invalid input; the checks include no server
error, status codes, content types, headers and bodies as declared, valid data accepted and invalid
data refused, the token required, unsupported methods refused. Stateful: sequences over every
operation, and over the records and the sandbox chat alone, which must follow the schema's links
(create a record, then read, update and delete it by the id the answer carries; say something in
the sandbox, then show the chat by its `chat_id`), with the checks that only sequences have (a
deleted entry is gone, a created one can be read).

Deterministic (derandomized, no example database) and bounded. The cases act on one real agent with
a conversation, queued work, records and a sandbox chat, so most operations answer for real rather
than with a 404.

`positive_data_acceptance` expects a schema-valid request to be accepted; the API also refuses, with
422 naming the field, values the schema cannot express (an event's time already past, a schedule
entry overlapping another, a `reply_to` not in the chat, an unknown field of a kind), so 422 is an
accepted answer to valid data here, as docs/api.md says.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.core.parameters import ParameterLocation

from api.services.tokens import api_token_create
from conversations.models import Conversation, Message, NodeStatus, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from engine.tests.cast import make_agent
from memory.models import Memory
from sandbox.services.chats import sandbox_say

CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {
                "expected-statuses": ["2xx", "401", "403", "404", "409", "422"],
            }
        }
    }
)
schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application(), config=CONFIG)

BOUNDS = settings(
    max_examples=4,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
PEER_ID = 1001
#: The token the running test made; the auth provider below signs every case with it.
SIGNED_IN: dict[str, str] = {}


@schema.auth(refresh_interval=None)
class OwnerToken:
    """The owner's token, as schemathesis' own authentication, so that the authentication checks
    know the credentials are real and can try the operation without them and with wrong ones."""

    def get(self, case, ctx):
        return SIGNED_IN.get("token", "")  # empty while pytest collects, before any test runs

    def set(self, case, data, ctx):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture
def stage(django_user_model, clock, settings, tmp_path):
    """An owner's token and an agent with something behind each resource.

    The WSGI app runs in the test's own transaction, so, as Django's test client does, a request
    must not close the database connection when it starts (`close_old_connections` would, as the
    transaction is not in autocommit: on MariaDB the test's transaction would be gone)."""
    request_started.disconnect(close_old_connections)
    settings.MEDIA_ROOT = tmp_path / "media"  # the sandbox upload stores its files there
    owner = django_user_model.objects.create_superuser("owner", "owner@example.com", "pw")
    _, token = api_token_create(user=owner, name="schema tests")
    agent = make_agent("Wendy")
    chat = Conversation.objects.create(agent=agent, peer_id=PEER_ID, kind="dm", title="Ann")
    Message.objects.create(conversation=chat, message_id=1, date=clock.now(), text="hi", sender_id=PEER_ID)
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    graph_append_chain(after=received, tasks=[("send", {"text": "hello"})])
    Memory.objects.create(
        agent=agent, kind=Memory.Kind.EPISODIC, entry_id="memory-1", content="x", created=clock.now()
    )
    sandbox_say(agent=agent, text="Hello", as_name="You")
    SIGNED_IN["token"] = token
    try:
        yield {"token": token, "agent_id": agent.pk, "conversation_id": chat.pk}
    finally:
        request_started.connect(close_old_connections)
        SIGNED_IN.clear()


def _on_stage(case, stage) -> None:
    """Points the case at the staged agent and conversation (a generated id would only find 404). A
    path generated to be invalid (negative data: a boolean for an id) is left as it is, so that the
    request stays as invalid as schemathesis expects."""
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH):
        return
    for name in ("agent_id", "conversation_id"):
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = stage[name]


@pytest.mark.django_db
@schema.parametrize()
@BOUNDS
def test_every_operation_answers_as_its_schema_says(case, stage):
    _on_stage(case, stage)
    case.call_and_validate()


@pytest.mark.parametrize(("kind", "per_conversation"), [("notes", True), ("memories", False)])
def test_the_schema_links_create_to_read_update_and_delete(client, kind, per_conversation):
    """The stateful phase has the schema's own links to follow, not only what it infers (read from
    the served schema: schemathesis adds the links it infers to its own copy)."""
    served = client.get("/api/v1/openapi.json").json()["paths"]
    created = served[f"/api/v1/agents/{{agent_id}}/records/{kind}"]["post"]["responses"]["201"]["links"]
    said = served["/api/v1/agents/{agent_id}/sandbox/messages"]["post"]["responses"]["201"]["links"]
    expected = {"agent_id": "$request.path.agent_id", "entry_id": "$response.body#/id"}
    if per_conversation:
        expected["channel_id"] = "$response.body#/channel_id"

    assert {name: link["operationId"] for name, link in created.items()} == {
        "ReadEntry": f"{kind}_read",
        "UpdateEntry": f"{kind}_update",
        "DeleteEntry": f"{kind}_delete",
    }
    assert [link["parameters"] for link in created.values()] == [expected] * 3
    assert said["ShowChat"]["operationId"] == "sandbox_show"
    assert said["ShowChat"]["parameters"]["chat_id"] == "$response.body#/chat_id"
    operation_ids = {op.get("operationId") for path in served.values() for op in path.values()}
    assert {f"{kind}_read", f"{kind}_update", f"{kind}_delete", "sandbox_show"} <= operation_ids


def _in_the_conversation(case) -> None:
    """A valid generated `channel_id` becomes the staged conversation's, so that a created note or
    plan has somewhere to belong and the links from it lead somewhere (an invalid one is left)."""
    for values in (case.body, case.query):
        if isinstance(values, dict) and type(values.get("channel_id")) is int:
            if abs(values["channel_id"]) <= 2**62:
                values["channel_id"] = PEER_ID


def _machine(stage, operations, answered: list[tuple[str, int, str | None]]):
    """The state machine of `operations`, on the stage; each answer noted as (operation, status, the
    entry id it was about: the one created, or the one in the path)."""

    class OnStage(operations.as_state_machine()):
        def before_call(self, case):
            _on_stage(case, stage)
            _in_the_conversation(case)

        def after_call(self, response, case):
            entry_id = (case.path_parameters or {}).get("entry_id")
            if case.method == "POST" and response.status_code == 201 and "/records/" in case.path:
                entry_id = response.json()["id"]
            answered.append((case.operation.label, response.status_code, entry_id))

    return OnStage


@pytest.mark.django_db
def test_sequences_over_every_operation_answer_as_the_schema_says(stage):
    answered: list[tuple[str, int, str | None]] = []

    _machine(stage, schema, answered).run(settings=settings(BOUNDS, max_examples=8, stateful_step_count=5))

    assert len({label for label, _, _ in answered}) > 10, answered
