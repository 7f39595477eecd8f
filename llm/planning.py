"""Planning one turn: from a `received` node to validated, policy-checked tasks.

Called by the engine's `received` handler on a worker. It stores nothing but LLM usage, refusals and
retrieved pages (in the graph context); remember/plan storage and node creation are the engine's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict
from functools import partial

from django.conf import settings
from django.db import transaction

from cindy_site.clock import get_clock
from cindy_site.parameters import parameter
from conversations.models import TaskGraph, TaskNode
from conversations.selectors import message_reactions
from llm.calls import MIN_ATTEMPT_SECONDS
from llm.conversation import history_window
from llm.errors import LLMConfigError, LLMDeadlineError
from llm.failover import call_llm_chain
from llm.file_sources import is_file_url, read_file_url
from llm.images import make_pictures
from llm.kinds import task_kind
from llm.media import warm_media_descriptions
from llm.models import LLMCall
from llm.parsing import ParseResult, parse_reply
from llm.plan_result import PlanResult
from llm.policy import apply_policy, turn_inputs
from llm.prompt import RetrievedPage, build_plan_request
from llm.prompt.instructions import turn_context_from_graph
from llm.prompt.sections import teaching_advice, turn_prompts
from llm.recalled import recall_results, turn_query
from llm.request import LLMRequest
from llm.retrieval import TIMEOUT_SECONDS as FETCH_TIMEOUT_SECONDS
from llm.retrieval import fetch_page
from llm.retrieved_kept import pages_kept
from llm.routing import UnknownModelError, routes_for
from llm.summarization import summarize_turn
from llm.task_schema import schema_kinds
from llm.tasks import MAX_RETRIEVE_URLS, Task
from media_catalog.parts import media_items
from media_catalog.selectors import saved_stickers_of

#: Time kept free at the end of the worker's timeout (CINDY_Q_TIMEOUT) for the engine to store the
#: plan after the LLM is done; at most a quarter of the timeout.
TURN_DEADLINE_MARGIN_SECONDS = 30.0
#: `recall` queries searched per round; further ones are skipped and the model is told so.
MAX_RECALL_QUERIES = 3


def turn_budget_seconds() -> float:
    """How long one turn may plan: CINDY_Q_TIMEOUT (django-q2's `timeout`) minus the margin."""
    worker_timeout = float(settings.Q_CLUSTER.get("timeout") or 300)
    return worker_timeout - min(TURN_DEADLINE_MARGIN_SECONDS, worker_timeout / 4)


def plan_turn(
    *,
    node_id: int,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
    node: TaskNode | None = None,
) -> PlanResult:
    """Plan the turn of one `received` node.

    The turn must end before django-q2 kills the worker (CINDY_Q_TIMEOUT), or the node would be lost
    mid-call: every LLM call, retry, backoff and page fetch respects `deadline` (the injected clock's
    monotonic time; default: now + turn_budget_seconds()) and LLMDeadlineError, a transient error,
    ends the turn early so the engine retries the node.

    1. Read the node, its graph and conversation, and the history from the DB mirror.
    2. Warm media descriptions within MEDIA_DESC_BUDGET_PER_TICK.
    3. Build the prompt (with what the agent recalls for the turn's new messages, llm/recalled.py),
       route, call the LLM (LLMCall rows and llm_call events are written); a route
       that fails in a way another can fix hands the same request to the agent's next fallback route
       (llm/failover.py).
    4. Parse and validate the reply. While it asks to retrieve pages (and the agent has the Retrieve
       prompt), fetch up to MAX_RETRIEVE_URLS new URLs (`file:NAME` from the agent's documents) into
       graph.context["retrieved"], tell the model which it skipped, and ask again, at most
       RETRIEVAL_MAX_ROUNDS times. A retrieve of only URLs already in context ends the rounds at once
       (no fetch, no further call; a note says so), as in the original. The pages earlier turns of
       the conversation fetched within CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS are in context from
       the start (llm/retrieved_kept.py); a retrieve of one of those fetches it again, as it may
       have changed since (`file:schedule.json` after a schedule task). A `recall` task is run in the
       same rounds: up to MAX_RECALL_QUERIES new queries are searched in the recall index
       (llm/recalled.py, `recall_results`) and their hits shown in the next request; a recall of
       words already searched this turn ends the rounds like a repeated retrieve.
    5. Drop think tasks and kinds the agent's prompts do not teach, apply the policy (refusals become
       policy_refused events), make the pictures of the allowed image tasks (llm/images.py) and return.

    A node that already waited for the provider (`llm_waits`) calls it without retries: one probe.
    `node` is the caller's fresh read of it, with its graph and its conversation's agent (the task
    reads it to check its claim), so that it is not read twice.
    """
    clock = get_clock()
    if deadline is None:
        deadline = clock.monotonic() + turn_budget_seconds()
    if node is None or node.pk != node_id:
        node = TaskNode.objects.select_related("graph", "conversation__agent").get(pk=node_id)
    graph, conversation = node.graph, node.conversation
    agent = conversation.agent
    try:
        routes = routes_for(
            agent_llm=agent.llm, conversation_llm=conversation.llm_model, agent_fallback=agent.llm_fallback
        )
    except UnknownModelError as exc:
        raise LLMConfigError(f"agent {agent.name}: {exc}") from exc
    if graph.trigger == TaskGraph.Trigger.SUMMARIZE:
        return summarize_turn(
            node=node, conversation=conversation, route=routes[0], sleep=sleep, deadline=deadline
        )

    window = history_window(conversation)
    ids = dict(agent_id=agent.pk, conversation_id=conversation.pk, node_id=node.pk)
    if warm_media_descriptions(window, sleep=sleep, deadline=deadline, **ids):
        window = history_window(conversation)  # new descriptions change how those messages read
    history = [m for m in window if m.in_prompt]
    reactions = _target_reactions(conversation.pk, graph.target_message_id)
    turn = turn_context_from_graph(graph, reactions=_reaction_notes(reactions))

    # A turn that already waited for the provider to come back probes it with a single request.
    max_retries = 0 if (node.params or {}).get("llm_waits") else None
    prompts, can_retrieve = turn_prompts(agent)  # read once: every round builds with them
    pages = list((graph.context or {}).get("retrieved") or [])
    own_urls = {page["url"] for page in pages}
    kept = [
        page | {"kept": True} for page in pages_kept(graph, at=clock.now()) if page["url"] not in own_urls
    ]
    if kept:
        # Stored in this graph, so the policy counts them as outside text and the transcript shows them.
        pages = kept + pages
        graph.context = _store_retrieved(graph.pk, pages)
    retrieved = [RetrievedPage(p["url"], p["content"]) for p in pages]
    fetched_at = {p["url"]: p.get("fetched_at") for p in pages}
    # Pages an earlier turn fetched (`kept`) are in context, but a retrieve of one fetches it again:
    # it may have changed since (an agent's `file:schedule.json` after a schedule task). Only what this
    # turn fetched counts as "already in context".
    stale = {p["url"] for p in pages if p.get("kept")}
    fetched = {page.url for page in retrieved} - stale
    retrieval_notes: list[str] = []
    repeat_notes: list[str] = []
    provider_notes: list[str] = []  # what a provider worked around (an endpoint without structured output)
    errors: list[str] = []
    call_ids: list[int] = []
    rounds = 0
    recall_query = turn_query(history, turn)  # the turn's new messages: llm/recalled.py
    recall_answers: list[str] = []  # the `recall` tasks' hits, shown from the next round on
    searched: set[str] = set()
    recall_memo: dict = {}  # the `# Recalled` search, once per turn whatever its rounds
    while True:
        request = build_plan_request(
            conversation,
            turn,
            history=history,
            retrieved=retrieved,
            include_retrieve=can_retrieve,
            notes=retrieval_notes,
            prompts=prompts,
            recall_query=recall_query,
            recall_answers=recall_answers,
            recall_memo=recall_memo,
        )
        answered = call_llm_chain(
            request,
            routes=routes,
            purpose=LLMCall.Purpose.PLAN,
            sleep=sleep,
            deadline=deadline,
            max_retries=max_retries,
            node_attempts=node.attempts,
            **ids,
        )
        reply = answered.reply
        call_ids.append(reply.llm_call_id)
        provider_notes += reply.notes
        if reply.status != "ok":
            errors.append(f"the LLM reply was {reply.status} ({reply.finish_reason or 'no reason given'})")
            parsed = ParseResult()
            break
        parsed = parse_reply(reply.text)
        wanted = [url for t in parsed.tasks if t.kind == "retrieve" for url in t.params["urls"]]
        queries = list(dict.fromkeys(t.params["query"] for t in parsed.tasks if t.kind == "recall"))
        if not wanted and not queries:
            break
        if wanted and not can_retrieve:
            errors.append(
                f"retrieve is not taught by agent {agent.name}'s prompts: {teaching_advice(agent, 'retrieve')}"
            )
            break
        if queries and "recall" not in schema_kinds(request.response_schema):
            errors.append(
                f"recall is not taught by agent {agent.name}'s prompts: {teaching_advice(agent, 'recall')}"
            )
            break
        new_urls = [url for url in dict.fromkeys(wanted) if url not in fetched]
        repeated = [url for url in dict.fromkeys(wanted) if url in fetched]
        new_queries = [query for query in queries if query not in searched]
        repeated_queries = [query for query in queries if query in searched]
        if not new_urls and not new_queries:
            # As the original: a retrieve of what is already in context does nothing and gets no
            # further call; the reply's other tasks run. A recall of words searched already likewise.
            if repeated:
                repeat_notes.append(_repeated_note(repeated))
            if repeated_queries:
                repeat_notes.append(_repeated_recall_note(repeated_queries))
            break
        if rounds >= parameter("RETRIEVAL_MAX_ROUNDS"):
            asked = [*new_urls, *(f"recall {query!r}" for query in new_queries)]
            errors.append(
                f"retrieval stopped after {rounds} rounds (RETRIEVAL_MAX_ROUNDS): the reply still asked "
                f"for {', '.join(asked)}; its other tasks ran"
            )
            break
        rounds += 1
        for query in new_queries[:MAX_RECALL_QUERIES]:
            recall_answers.append(recall_results(conversation, query=query, history=history))
            searched.add(query)
        skipped = new_urls[MAX_RETRIEVE_URLS:]
        for url in new_urls[:MAX_RETRIEVE_URLS]:
            if url in stale:  # the earlier turn's copy gives way to this fetch
                retrieved = [page for page in retrieved if page.url != url]
                stale.discard(url)
            retrieved.append(
                RetrievedPage(url, _retrieve(url, agent_id=agent.pk, deadline=deadline, so_far=retrieved))
            )
            fetched.add(url)
            fetched_at[url] = clock.now().isoformat()
        if new_urls:
            graph.context = _store_retrieved(
                graph.pk,
                [
                    asdict(p)
                    | {"fetched_at": fetched_at.get(p.url)}
                    | ({"kept": True} if p.url in stale else {})
                    for p in retrieved
                ],
            )
        retrieval_notes = [_skipped_note(skipped)] if skipped else []
        if repeated:
            retrieval_notes.append(
                f"Already in your context, not fetched again: {', '.join(repeated)}. Do not retrieve it again."
            )
        if repeated_queries or new_queries[MAX_RECALL_QUERIES:]:
            retrieval_notes.append(_recall_round_note(repeated_queries, new_queries[MAX_RECALL_QUERIES:]))

    tasks = _only_taught_kinds(
        [t for t in parsed.tasks if not _used_while_planning(t)], request, agent=agent, errors=errors
    )
    errors.extend(parsed.errors)
    tasks = _fill_canonical_sticker_set(tasks, agent=agent, errors=errors)
    tasks = _only_stickers_the_agent_has(tasks, agent=agent, window=window, errors=errors)
    inputs = partial(turn_inputs, conversation=conversation, graph=graph, history=window)
    allowed, refused = apply_policy(tasks, inputs=inputs, node_id=node.pk, trigger=graph.trigger)
    picture_notes: list[str] = []
    if any(t.kind == "image" for t in allowed):
        allowed = make_pictures(
            allowed,
            conversation=conversation,
            node_id=node.pk,
            errors=errors,
            notes=picture_notes,
            sleep=sleep,
            deadline=deadline,
        )
    thoughts = [t.params["text"] for t in parsed.tasks if t.kind == "think" and t.params.get("text")]
    return PlanResult(
        tasks=allowed,
        errors=errors,
        notes=[*parsed.notes, *repeat_notes, *picture_notes],
        call_notes=provider_notes,
        llm_call_ids=call_ids,
        thoughts=thoughts,
        refused=[f"{r.task.kind}: {r.reason}" for r in refused],
        answered_by=answered.answered_by,
    )


def _store_retrieved(graph_id: int, pages: list[dict]) -> dict:
    """Keep the pages in the graph's context, read afresh under a lock: the gateway may queue a
    trigger behind this graph meanwhile (`context["queued"]`), which must not be overwritten."""
    with transaction.atomic():
        graph = TaskGraph.objects.select_for_update().get(pk=graph_id)
        graph.context = {**(graph.context or {}), "retrieved": pages}
        graph.save(update_fields=["context"])
    return graph.context


def _retrieve(url: str, *, agent_id: int, deadline: float, so_far: list[RetrievedPage]) -> str:
    """A page's text: `file:NAME` from the agent's documents, anything else fetched from the web."""
    if is_file_url(url):
        return read_file_url(agent_id=agent_id, url=url)
    clock = get_clock()
    if deadline - clock.monotonic() < FETCH_TIMEOUT_SECONDS + MIN_ATTEMPT_SECONDS:
        raise LLMDeadlineError(
            f"retrieval stopped before {url}: the turn's deadline (CINDY_Q_TIMEOUT) is "
            f"{max(0.0, deadline - clock.monotonic()):.0f} s away; the {len(so_far)} pages "
            "fetched so far are kept and the node will be retried"
        )
    return fetch_page(url).content


def _repeated_note(urls: list[str]) -> str:
    return (
        f"retrieve {', '.join(urls)}: already in context from earlier in this turn, so it was answered from "
        "there without fetching again or another LLM call; the reply's other tasks ran"
    )


def _repeated_recall_note(queries: list[str]) -> str:
    return (
        f"recall {', '.join(map(repr, queries))}: searched already in this turn, so it was answered from "
        "context without searching again or another LLM call; the reply's other tasks ran"
    )


def _recall_round_note(repeated: list[str], skipped: list[str]) -> str:
    parts = []
    if repeated:
        parts.append(
            f"Already searched, shown above: {', '.join(map(repr, repeated))}. Do not recall it again."
        )
    if skipped:
        parts.append(
            f"Only {MAX_RECALL_QUERIES} recall queries are searched per round; these were skipped: "
            f"{', '.join(map(repr, skipped))}. Recall them again if you still need them."
        )
    return " ".join(parts)


def _skipped_note(urls: list[str]) -> str:
    return (
        f"Only {MAX_RETRIEVE_URLS} pages are fetched per retrieve; these were skipped: "
        + ", ".join(urls)
        + ". Retrieve them again if you still need them."
    )


def _used_while_planning(task: Task) -> bool:
    """Whether planning consumes the task itself (think, retrieve) instead of scheduling or storing it."""
    kind = task_kind(task.kind)
    return kind is not None and kind.runs == "planning"


def _only_taught_kinds(tasks: list[Task], request: LLMRequest, *, agent, errors: list[str]) -> list[Task]:
    """Tasks of kinds the reply schema allows: the kinds the turn's prompts teach (SCHEMA_TASKS).

    A dropped kind's error names the role prompt that would teach it.
    """
    allowed = set(schema_kinds(request.response_schema))
    kept = []
    advice: dict[str, str] = {}
    for task in tasks:
        if task.kind in allowed:
            kept.append(task)
            continue
        if task.kind not in advice:
            advice[task.kind] = teaching_advice(agent, task.kind)
        errors.append(
            f'task kind "{task.kind}" is not taught by agent {agent.name}\'s prompts: dropped; {advice[task.kind]}'
        )
    return kept


def _fill_canonical_sticker_set(tasks: list[Task], *, agent, errors: list[str]) -> list[Task]:
    """Legacy name-only sticker blocks use the agent's canonical set: its first "Agent Sticker Sets"."""
    canonical = next((name for name in agent.sticker_set_names or [] if name), "")
    kept = []
    for task in tasks:
        if task.kind == "sticker" and not task.params.get("sticker_set"):
            if not canonical:
                errors.append(
                    f'sticker "{task.params["name"]}": the sticker block names no set and agent '
                    f'{agent.name} has no sticker set configured: add one under "Agent Sticker Sets" in '
                    "its persona (the first is used), or put the set on the line before the sticker name"
                )
                continue
            task.params["sticker_set"] = canonical
        kept.append(task)
    return kept


def _only_stickers_the_agent_has(tasks: list[Task], *, agent, window, errors: list[str]) -> list[Task]:
    """Sticker tasks from a set the agent has: one of its "Agent Sticker Sets", one of its "Agent
    Stickers", a sticker its account keeps in Saved Messages, or a set a sticker shown in this chat
    came from (the prompt offers those too)."""
    sets = {name for name in agent.sticker_set_names or [] if name}
    explicit = set()
    for item in agent.explicit_stickers or []:
        set_name, _, name = str(item).partition("::")
        explicit.add((set_name.strip(), name.strip()))
    explicit |= {(str(s.get("set")), str(s.get("name"))) for s in saved_stickers_of(agent_id=agent.pk)}
    seen = {
        part.sticker_set_name
        for message in window
        for part in media_items(message.media)
        if part.sticker_set_name
    }
    kept = []
    for task in tasks:
        set_name, name = task.params.get("sticker_set", ""), task.params.get("name", "")
        if task.kind != "sticker" or set_name in sets or set_name in seen or (set_name, name) in explicit:
            kept.append(task)
            continue
        errors.append(
            f'sticker {set_name}::{name}: agent {agent.name} has no sticker set "{set_name}" (its sets: '
            f"{', '.join(sorted(sets)) or 'none'}) and no sticker of it was shown in this chat: dropped; "
            f'to allow it, add the set under "Agent Sticker Sets" or "{set_name}::{name}" under '
            '"Agent Stickers" in its persona'
        )
    return kept


def _target_reactions(conversation_id: int, message_id: int | None) -> list | None:
    """The reactions on the turn's target message (None without one)."""
    if message_id is None:
        return None
    return message_reactions(conversation_id=int(conversation_id), message_id=int(message_id))


def _reaction_notes(reactions: list | None) -> tuple[str, ...]:
    notes = []
    for reaction in reactions or []:
        count = reaction.get("count", 1)
        notes.append(
            f"{reaction.get('emoji', '?')} ×{count}" + (" (unread)" if reaction.get("unread") else "")
        )
    return tuple(notes)
