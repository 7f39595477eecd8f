"""Retrieve as the original runs it (3 pages a round, empty lists dropped, file: documents) and the
reply schema built from the SCHEMA_TASKS markers of the agent's prompts."""

from __future__ import annotations

import json

import pytest

from agents.models import AgentDocument, RolePrompt
from conversations.models import ActivityEvent, NodeStatus, TaskGraph, TaskNode
from engine.tests.harness import tasks
from llm import file_sources
from llm.tests import local_site
from sandbox.services.chats import sandbox_say, sandbox_transcript

pytestmark = pytest.mark.django_db
retriever, site = local_site.retriever, local_site.site  # the shared retrieval fixtures


def _contents(request) -> str:
    return json.dumps(request.json["contents"], ensure_ascii=False)


def test_more_than_three_urls_fetch_three_and_tell_the_model_the_rest_were_skipped(
    retriever, harness, fake_llm, site
):
    urls = [f"{site}/page?{i}" for i in range(5)]
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": urls}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Read three."}))
    sandbox_say(agent=retriever, text="look these up")
    harness.settle()
    graph = TaskNode.objects.get(kind="received").graph
    assert [page["url"] for page in graph.context["retrieved"]] == urls[:3]
    second = _contents(fake_llm.requests[1])
    assert "these were skipped: " + ", ".join(urls[3:]) in second
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: Read three."


def test_an_empty_url_list_is_dropped_silently(retriever, harness, fake_llm):
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": []}, {"kind": "send", "text": "No need."}))
    sandbox_say(agent=retriever, text="hi")
    harness.settle()
    received = TaskNode.objects.get(kind="received")
    assert received.result["errors"] == [] and received.result["notes"] == []
    assert len(fake_llm.requests) == 1
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: No need."


def test_file_urls_read_the_agents_documents(retriever, harness, fake_llm):
    AgentDocument.objects.create(agent=retriever, name="Friends.md", content="Sam likes sourdough.")
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:Friends.md", "file:Enemies.md"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Sam likes sourdough!"}))
    sandbox_say(agent=retriever, text="what does Sam like?")
    harness.settle()
    second = _contents(fake_llm.requests[1])
    assert "Sam likes sourdough." in second
    assert "There is no file named 'Enemies.md'" in second
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: Sam likes sourdough!"


def test_a_document_named_as_http_name_in_the_persona_is_retrieved_as_that_document(
    retriever, harness, fake_llm
):
    # A persona written for the original may say "more details at `http:Garden.md`".
    AgentDocument.objects.create(agent=retriever, name="Garden.md", content="The pear tree fruits in May.")
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["http:Garden.md"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "In May!"}))
    sandbox_say(agent=retriever, text="when does the pear tree fruit?")
    harness.settle()
    received = TaskNode.objects.get(kind="received")
    assert received.status == NodeStatus.DONE and received.result["errors"] == []
    assert "# Your document file:Garden.md" in _contents(fake_llm.requests[1])
    assert "The pear tree fruits in May." in _contents(fake_llm.requests[1])
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: In May!"


def test_a_registered_file_name_is_served_by_its_source(retriever, harness, fake_llm, monkeypatch):
    monkeypatch.setitem(file_sources._NAMED, "schedule.json", lambda agent_id, name: '{"today": "baking"}')
    fake_llm.reply_with(tasks({"kind": "retrieve", "urls": ["file:schedule.json"]}))
    fake_llm.reply_with(tasks({"kind": "send", "text": "Baking today."}))
    sandbox_say(agent=retriever, text="busy?")
    harness.settle()
    assert '{\\"today\\": \\"baking\\"}' in _contents(fake_llm.requests[1])


def test_a_malformed_url_is_a_task_error_and_the_rest_still_runs(retriever, harness, fake_llm):
    fake_llm.reply_with(
        tasks({"kind": "retrieve", "urls": ["http://[::1/"]}, {"kind": "send", "text": "Sorry, bad link."})
    )
    sandbox_say(agent=retriever, text="open http://[::1/")
    harness.settle()
    errors = TaskNode.objects.get(kind="received").result["errors"]
    assert len(errors) == 1 and "is malformed" in errors[0]
    assert sandbox_transcript(agent=retriever)[-1] == "Wendy: Sorry, bad link."


def _schema_kinds(request) -> list[str]:
    return request.json["generationConfig"]["responseSchema"]["items"]["properties"]["kind"]["enum"]


def test_the_schema_allows_the_kinds_the_prompts_teach(agent, harness, fake_llm):
    RolePrompt.objects.create(name="Instructions", text="<!-- SCHEMA_TASKS: send, think -->\n# Format\n...")
    RolePrompt.objects.create(name="Task-Memory", text="<!-- schema_tasks: remember, nosuch -->\n# Memory")
    agent.role_prompt_names = ["Task-Memory"]
    agent.save()
    fake_llm.reply_with(
        tasks(
            {"kind": "send", "text": "hi"},
            {"kind": "remember", "content": "x"},
            {"kind": "plan", "content": "y"},
        )
    )
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    conversational = ["send", "sticker", "react", "wait", "block", "unblock", "think"]
    assert _schema_kinds(fake_llm.requests[0]) == [*conversational, "remember"]
    received = TaskNode.objects.get(kind="received")
    assert [e for e in received.result["errors"] if '"plan" is not taught' in e]
    assert received.result["stored"][0].startswith("remember ")


def test_a_role_prompt_without_a_marker_teaches_nothing_and_instructions_always_teach_sending(
    agent, harness, fake_llm
):
    RolePrompt.objects.create(name="Instructions", text="# Format\nAnswer with JSON tasks.")
    RolePrompt.objects.create(name="Chatbot", text="# Chatbot\nBe kind.")
    agent.role_prompt_names = ["Chatbot"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "send", "text": "hi"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    assert _schema_kinds(fake_llm.requests[0]) == [
        "send",
        "sticker",
        "react",
        "wait",
        "block",
        "unblock",
        "think",
    ]
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: hi"


def test_a_dropped_kind_names_the_role_prompt_that_would_teach_it(agent, harness, fake_llm):
    RolePrompt.objects.create(name="Instructions", text="# Format")
    RolePrompt.objects.create(name="Task-Memory", text="<!-- SCHEMA_TASKS: remember, note -->\n# Memory")
    RolePrompt.objects.create(name="Task-XSend", text="<!-- SCHEMA_TASKS: xsend -->\n# Elsewhere")
    agent.role_prompt_names = ["Task-XSend"]
    agent.save()
    fake_llm.reply_with(tasks({"kind": "note", "content": "x"}, {"kind": "send", "text": "ok"}))
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    errors = TaskNode.objects.get(kind="received").result["errors"]
    assert errors == [
        'task kind "note" is not taught by agent Wendy\'s prompts: dropped; '
        'add role prompt Task-Memory, which teaches "note", to agent Wendy'
    ]
    assert sandbox_transcript(agent=agent)[-1] == "Wendy: ok"


def test_a_turn_whose_every_task_was_dropped_is_a_failed_turn_not_done(agent, harness, fake_llm):
    RolePrompt.objects.create(name="Instructions", text="# Format")
    fake_llm.reply_with(
        tasks({"kind": "remember", "content": "x"}, {"kind": "xsend", "target_channel_id": 1})
    )
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    received = TaskNode.objects.get(kind="received")
    assert received.status == NodeStatus.FAILED
    assert received.error.startswith("every task of the reply was dropped (2): ")
    assert 'no imported role prompt teaches "xsend"' in received.error
    event = ActivityEvent.objects.filter(node_id=received.pk, kind=ActivityEvent.Kind.NODE_FAILED).get()
    assert "planned nothing: every task of the reply was dropped" in event.summary
    assert not ActivityEvent.objects.filter(node_id=received.pk, kind=ActivityEvent.Kind.NODE_DONE).exists()
    assert received.graph.status == TaskGraph.Status.DONE  # the turn is over; its failure is the node's


def test_an_empty_reply_is_a_quiet_turn_not_a_failure(agent, harness, fake_llm):
    fake_llm.reply_with(tasks())
    sandbox_say(agent=agent, text="hello")
    harness.settle()
    assert TaskNode.objects.get(kind="received").status == NodeStatus.DONE
