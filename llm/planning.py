"""Planning one turn: from a `received` node to validated, policy-checked tasks.

Called by the engine's `received` handler on a worker. It stores nothing but LLM usage, refusals and
retrieved pages (in the graph context); remember/plan storage and node creation are the engine's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.conf import settings

from conversations.models import Message, TaskNode
from llm.calls import call_llm
from llm.conversation import agent_timezone, history_messages, to_chat_messages
from llm.errors import LLMConfigError
from llm.media import warm_media_descriptions
from llm.parsing import ParseResult, parse_reply
from llm.policy import apply_policy
from llm.prompt import RetrievedPage, build_plan_request
from llm.prompt.instructions import turn_context_from_graph
from llm.prompt.sections import RETRIEVE_PROMPT
from llm.prompt.sections import can_retrieve as retrieval_enabled
from llm.retrieval import fetch_page
from llm.routing import UnknownModelError, route_for
from llm.tasks import Task

_NOT_SCHEDULED = ("think", "retrieve")


@dataclass
class PlanResult:
    tasks: list[Task] = field(
        default_factory=list
    )  # LLM order; think dropped, retrieve resolved, refusals removed
    errors: list[str] = field(default_factory=list)  # invalid or unknown tasks, never executed
    llm_call_ids: list[int] = field(default_factory=list)


def plan_turn(*, node_id: int, sleep: Callable[[float], None] = time.sleep) -> PlanResult:
    """Plan the turn of one `received` node.

    1. Read the node, its graph and conversation, and the history from the DB mirror.
    2. Warm media descriptions within MEDIA_DESC_BUDGET_PER_TICK.
    3. Build the prompt, route, call the LLM (LLMCall rows and llm_call events are written).
    4. Parse and validate the reply. While it asks to retrieve pages (and the agent has the Retrieve
       prompt), fetch new URLs into graph.context["retrieved"] and ask again, at most
       RETRIEVAL_MAX_ROUNDS times; repeated URLs drop the Retrieve prompt instead of fetching.
    5. Drop think tasks, apply the policy (refusals become policy_refused events) and return.
    """
    node = TaskNode.objects.select_related("graph", "conversation__agent").get(pk=node_id)
    graph, conversation = node.graph, node.conversation
    agent = conversation.agent
    try:
        route = route_for(agent_llm=agent.llm, conversation_llm=conversation.llm_model)
    except UnknownModelError as exc:
        raise LLMConfigError(f"agent {agent.name}: {exc}") from exc

    messages = history_messages(conversation)
    ids = dict(agent_id=agent.pk, conversation_id=conversation.pk, node_id=node.pk)
    warm_media_descriptions(messages, sleep=sleep, **ids)
    history = to_chat_messages(messages, tz=agent_timezone(agent))
    target = _target_message(conversation.pk, graph.target_message_id)
    turn = turn_context_from_graph(graph, reactions=_reaction_notes(target))

    can_retrieve = retrieval_enabled(agent)
    retrieved = [RetrievedPage(p["url"], p["content"]) for p in (graph.context or {}).get("retrieved", [])]
    fetched = {page.url for page in retrieved}
    suppress_retrieve = False
    errors: list[str] = []
    call_ids: list[int] = []
    rounds = 0
    while True:
        request = build_plan_request(
            conversation,
            turn,
            history=history,
            retrieved=retrieved,
            include_retrieve=can_retrieve and not suppress_retrieve,
        )
        reply = call_llm(request, route=route, purpose="plan", sleep=sleep, **ids)
        call_ids.append(reply.llm_call_id)
        if reply.status != "ok":
            errors.append(f"the LLM reply was {reply.status} ({reply.finish_reason or 'no reason given'})")
            parsed = ParseResult()
            break
        parsed = parse_reply(reply.text)
        wanted = [url for t in parsed.tasks if t.kind == "retrieve" for url in t.params["urls"]]
        if not wanted:
            break
        if not can_retrieve:
            errors.append(
                f"retrieve is not enabled for agent {agent.name}: add {RETRIEVE_PROMPT} to its role prompts"
            )
            break
        if rounds >= settings.RETRIEVAL_MAX_ROUNDS:
            errors.append(f"retrieval stopped after {rounds} rounds (RETRIEVAL_MAX_ROUNDS)")
            break
        rounds += 1
        new_urls = [url for url in dict.fromkeys(wanted) if url not in fetched]
        if not new_urls:
            suppress_retrieve = True
            continue
        for url in new_urls:
            retrieved.append(RetrievedPage(url, fetch_page(url).content))
            fetched.add(url)
        graph.context = {**(graph.context or {}), "retrieved": [asdict(p) for p in retrieved]}
        graph.save(update_fields=["context"])

    tasks = [t for t in parsed.tasks if t.kind not in _NOT_SCHEDULED]
    errors.extend(parsed.errors)
    sender_id = target.sender_id if target is not None and not target.is_agent else None
    allowed, _refused = apply_policy(
        tasks, conversation=conversation, trigger_sender_id=sender_id, node_id=node.pk
    )
    return PlanResult(tasks=allowed, errors=errors, llm_call_ids=call_ids)


def _target_message(conversation_id: int, message_id: int | None) -> Message | None:
    if message_id is None:
        return None
    return Message.objects.filter(conversation_id=conversation_id, message_id=message_id).first()


def _reaction_notes(message: Message | None) -> tuple[str, ...]:
    if message is None:
        return ()
    notes = []
    for reaction in message.reactions or []:
        count = reaction.get("count", 1)
        notes.append(
            f"{reaction.get('emoji', '?')} ×{count}" + (" (unread)" if reaction.get("unread") else "")
        )
    return tuple(notes)
