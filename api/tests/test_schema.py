"""Every operation of the served OpenAPI schema, exercised by schemathesis as a superuser.

Checks: no server error, and every response matches the schema (errors included). Deterministic
(derandomized, no example database) and bounded (a few dozen examples per operation). The cases act
on one real agent with a conversation, queued work, records and a sandbox chat, so most operations
answer for real rather than with a 404.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from api.services.tokens import api_token_create
from conversations.models import Conversation, Message, NodeStatus, TaskNode
from conversations.services.graphs import graph_append_chain, graph_replan
from engine.tests.cast import make_agent
from memory.models import Memory
from sandbox.services.chats import sandbox_say

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())


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
    chat = Conversation.objects.create(agent=agent, peer_id=1001, kind="dm", title="Ann")
    Message.objects.create(conversation=chat, message_id=1, date=clock.now(), text="hi", sender_id=1001)
    graph = graph_replan(conversation=chat, trigger="message", target_message_id=None)
    received = graph.nodes.get()
    TaskNode.objects.filter(pk=received.pk).update(status=NodeStatus.DONE)
    graph_append_chain(after=received, tasks=[("send", {"text": "hello"})])
    Memory.objects.create(
        agent=agent, kind=Memory.Kind.EPISODIC, entry_id="memory-1", content="x", created=clock.now()
    )
    sandbox_say(agent=agent, text="Hello", as_name="You")
    try:
        yield {"token": token, "agent_id": agent.pk, "conversation_id": chat.pk}
    finally:
        request_started.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=12,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_answers_as_its_schema_says(case, stage):
    for name in ("agent_id", "conversation_id"):
        if case.path_parameters and name in case.path_parameters:
            case.path_parameters[name] = stage[name]
    case.call_and_validate(
        headers={"Authorization": f"Bearer {stage['token']}"},
        checks=[not_a_server_error, response_schema_conformance],
    )
