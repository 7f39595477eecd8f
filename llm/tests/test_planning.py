from __future__ import annotations

import json

import pytest

from conversations.models import ActivityEvent
from llm.errors import LLMConfigError, LLMDeadlineError, LLMTransientError
from llm.models import LLMCall
from llm.planning import plan_turn, turn_budget_seconds
from llm.tests.conftest import add_message


def _reply(*tasks) -> str:
    return json.dumps(list(tasks), ensure_ascii=False)


def _plan(node):
    return plan_turn(node_id=node.pk, sleep=lambda seconds: None)


def test_a_dm_turn_becomes_tasks_with_think_dropped(dm, fake_llm, make_node, clock):
    add_message(dm, 5, "Do you have rye?")
    node = make_node(dm, target=5)
    fake_llm.reply_with(
        _reply(
            {"kind": "think", "text": "she wants rye"},
            {"kind": "send", "text": "Yes! 🍞", "reply_to": 5},
            {"kind": "remember", "content": "Alice likes rye"},
        )
    )

    result = _plan(node)

    assert [(t.kind, t.params) for t in result.tasks] == [
        ("send", {"text": "Yes! 🍞", "reply_to": 5}),
        ("remember", {"content": "Alice likes rye"}),
    ]
    assert result.errors == []
    call = LLMCall.objects.get(pk=result.llm_call_ids[0])
    assert (call.node_id, call.conversation_id, call.purpose) == (node.pk, dm.pk, "plan")
    final_part = fake_llm.requests[0].json["contents"][-1]["parts"][0]["text"]
    assert final_part.endswith("Consider responding to message with message_id 5.")


def test_invalid_and_refused_tasks_never_come_back(group, fake_llm, make_node, clock):
    add_message(group, 9, "@Wendy block Bob", sender="Alice", sender_id=1001, mentions_agent=True)
    node = make_node(group, target=9)
    fake_llm.reply_with(_reply({"kind": "block"}, {"kind": "teleport"}, {"kind": "send", "text": "No."}))

    result = _plan(node)

    assert [t.kind for t in result.tasks] == ["send"]
    assert any('kind "teleport" is unknown' in e for e in result.errors)
    assert ActivityEvent.objects.filter(kind="policy_refused", node_id=node.pk).count() == 1


def test_shutdown_from_an_operator_is_kept(dm, fake_llm, make_node, settings, clock):
    settings.CINDY_OPERATOR_IDS = [1001]
    add_message(dm, 3, "please shut down")
    fake_llm.reply_with(_reply({"kind": "shutdown"}))

    assert [t.kind for t in _plan(make_node(dm, target=3)).tasks] == ["shutdown"]


def test_blocked_reply_gives_no_tasks_and_is_recorded(dm, fake_llm, make_node, clock):
    add_message(dm, 1, "hi")
    fake_llm.reply_with("x", blocked=True)

    result = _plan(make_node(dm, target=1))

    assert result.tasks == [] and "blocked" in result.errors[0]
    assert LLMCall.objects.get().status == "blocked"


def test_conversation_override_routes_to_grok(dm, fake_llm, make_node, clock):
    dm.llm_model = "grok"
    dm.save()
    add_message(dm, 1, "hi")
    fake_llm.reply_with(_reply({"kind": "send", "text": "hey"}))

    _plan(make_node(dm, target=1))

    assert fake_llm.requests[0].path == "/v1/chat/completions"
    assert fake_llm.requests[0].json["model"] == "grok-4-fast-non-reasoning"


def test_missing_key_and_unknown_llm_are_config_errors(dm, fake_llm, make_node, settings, clock):
    add_message(dm, 1, "hi")
    node = make_node(dm, target=1)
    settings.GOOGLE_GEMINI_API_KEY = ""
    with pytest.raises(LLMConfigError, match="GOOGLE_GEMINI_API_KEY is not set"):
        _plan(node)

    dm.agent.llm = "nosuch-9"
    dm.agent.save()
    with pytest.raises(LLMConfigError, match='agent Wendy: LLM "nosuch-9" is not a known name'):
        _plan(node)


def test_retrieved_pages_are_fed_back_and_kept_in_the_graph(retriever, dm, fake_llm, make_node, site, clock):
    add_message(dm, 1, "what is rye?")
    node = make_node(dm, target=1)
    fake_llm.reply_with(
        _reply({"kind": "retrieve", "urls": [site + "/page"]}, {"kind": "send", "text": "ignored"})
    )
    fake_llm.reply_with(_reply({"kind": "send", "text": "Rye is dense."}))

    result = _plan(node)

    assert [t.params["text"] for t in result.tasks] == ["Rye is dense."]
    assert len(result.llm_call_ids) == 2
    second = json.dumps(fake_llm.requests[1].json["contents"], ensure_ascii=False)
    assert "Rye bread is dense." in second and "untrusted" in second
    node.graph.refresh_from_db()
    assert node.graph.context["retrieved"][0]["url"] == site + "/page"


def test_a_repeated_retrieve_is_answered_from_context_without_another_call(
    retriever, dm, fake_llm, make_node, site, clock
):
    add_message(dm, 1, "what is rye?")
    url = site + "/page"
    fake_llm.reply_with(_reply({"kind": "retrieve", "urls": [url]}))
    fake_llm.reply_with(
        _reply({"kind": "retrieve", "urls": [url]}, {"kind": "send", "text": "Rye is dense."})
    )
    fake_llm.reply_with(_reply({"kind": "send", "text": "never asked"}))

    result = _plan(make_node(dm, target=1))

    assert len(fake_llm.requests) == 2
    assert [t.params["text"] for t in result.tasks] == ["Rye is dense."]
    assert result.errors == []
    assert result.notes == [
        f"retrieve {url}: already in context from earlier in this turn, so it was answered from there without "
        "fetching again or another LLM call; the reply's other tasks ran"
    ]


def test_retrieval_rounds_are_bounded(retriever, dm, fake_llm, make_node, site, settings, clock):
    settings.RETRIEVAL_MAX_ROUNDS = 2
    add_message(dm, 1, "what is rye?")
    for i in range(5):
        fake_llm.reply_with(_reply({"kind": "retrieve", "urls": [f"{site}/page?{i}"]}))

    result = _plan(make_node(dm, target=1))

    assert len(fake_llm.requests) == 3
    assert result.tasks == [] and "retrieval stopped after 2 rounds" in result.errors[0]


def test_retrieve_without_the_retrieve_prompt_is_an_error(dm, fake_llm, make_node, clock):
    add_message(dm, 1, "look it up")
    fake_llm.reply_with(
        _reply({"kind": "retrieve", "urls": ["https://example.com/"]}, {"kind": "send", "text": "hm"})
    )

    result = _plan(make_node(dm, target=1))

    assert [t.kind for t in result.tasks] == ["send"]
    assert result.errors[0] == (
        'retrieve is not taught by agent Wendy\'s prompts: no imported role prompt teaches "retrieve": '
        "import one whose SCHEMA_TASKS marker names it (the shipped configdir/prompts do) and add it to "
        "the agent's role prompts"
    )
    assert len(fake_llm.requests) == 1


def test_a_legacy_name_only_sticker_uses_the_agents_first_sticker_set(agent, dm, fake_llm, make_node, clock):
    agent.sticker_set_names = ["WendyDancer", "OtherSet"]
    agent.save()
    add_message(dm, 4, "show me a wink")
    fake_llm.reply_with("# «sticker» 4\n😉\n")

    result = _plan(make_node(dm, target=4))

    assert result.errors == []
    assert [(t.kind, t.params) for t in result.tasks] == [
        ("sticker", {"sticker_set": "WendyDancer", "name": "😉", "reply_to": 4})
    ]


def test_a_legacy_name_only_sticker_without_a_configured_set_is_an_error(dm, fake_llm, make_node, clock):
    add_message(dm, 4, "show me a wink")
    fake_llm.reply_with("# «sticker»\n😉\n\n# «send»\nhere")

    result = _plan(make_node(dm, target=4))

    assert [t.kind for t in result.tasks] == ["send"]
    assert len(result.errors) == 1
    assert (
        'sticker "😉"' in result.errors[0] and "agent Wendy has no sticker set configured" in result.errors[0]
    )
    assert '"Agent Sticker Sets"' in result.errors[0]


def test_retries_stop_before_the_worker_timeout(dm, fake_llm, make_node, settings, clock):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 100}  # the turn gets 75 s
    settings.LLM_MAX_RETRIES = 10
    add_message(dm, 1, "hi")
    fake_llm.fail_next(503, times=11)
    started = clock.monotonic()

    with pytest.raises(LLMTransientError, match="before the turn's deadline") as raised:
        plan_turn(node_id=make_node(dm, target=1).pk, sleep=clock.advance)

    assert isinstance(raised.value, LLMDeadlineError)
    assert "CINDY_Q_TIMEOUT" in str(raised.value) and "last error" in str(raised.value)
    assert 1 < len(fake_llm.requests) < 11
    assert clock.monotonic() - started <= 75
    assert "deadline" in LLMCall.objects.get(status="error").error


def test_no_call_starts_when_the_deadline_is_too_close(dm, fake_llm, make_node, clock):
    add_message(dm, 1, "hi")

    with pytest.raises(LLMDeadlineError, match="before any attempt"):
        plan_turn(node_id=make_node(dm, target=1).pk, sleep=clock.advance, deadline=clock.monotonic() + 3)

    assert fake_llm.requests == []


def test_retrieval_stops_at_the_deadline_and_keeps_nothing_half_done(
    retriever, dm, fake_llm, make_node, site, clock
):
    add_message(dm, 1, "what is rye?")
    node = make_node(dm, target=1)
    fake_llm.reply_with(_reply({"kind": "retrieve", "urls": [site + "/page"]}))

    with pytest.raises(LLMDeadlineError, match="retrieval stopped before"):
        plan_turn(node_id=node.pk, sleep=clock.advance, deadline=clock.monotonic() + 12)

    assert len(fake_llm.requests) == 1
    node.graph.refresh_from_db()
    assert "retrieved" not in node.graph.context


def test_the_turn_budget_leaves_a_margin_below_the_worker_timeout(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300}
    assert turn_budget_seconds() == 270
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 60}
    assert turn_budget_seconds() == 45


def test_a_turn_given_its_node_reads_neither_the_node_nor_the_role_prompts_twice(
    dm, fake_llm, make_node, clock
):
    """The planning task reads the node (with graph, conversation and agent) to check its claim and
    hands it over: the turn reads no node row, and the role prompts once, though it builds the prompt
    and the plan's fingerprint from them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from conversations.models import TaskNode

    add_message(dm, 5, "Do you have rye?")
    node = make_node(dm, target=5)
    read = TaskNode.objects.select_related("agent", "graph", "conversation__agent").get(pk=node.pk)
    fake_llm.reply_with(_reply({"kind": "send", "text": "Yes!"}))

    with CaptureQueriesContext(connection) as queries:
        result = plan_turn(node_id=node.pk, sleep=lambda seconds: None, node=read)

    assert [t.kind for t in result.tasks] == ["send"]
    selects = [
        q["sql"].replace("`", '"')  # MariaDB quotes names with backticks
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith("SELECT")
    ]
    assert [s for s in selects if 'FROM "conversations_tasknode"' in s] == []
    assert len([s for s in selects if 'FROM "agents_roleprompt"' in s]) == 1
