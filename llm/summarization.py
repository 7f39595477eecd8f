"""A summarization turn: the planning turn of a graph whose trigger is `summarize`.

It goes through the same planning task, prompt builder and parser as a reply. What differs:

- the history is the messages to summarize (`conversations.services.summaries.messages_to_summarize`),
  and the final turn carries our summarization instructions (an imported `Instructions-Summarize`
  prompt replaces them);
- the reply may hold only `summarize` (and `think`) tasks: anything else is dropped with a note, so
  the turn never sends anything to the chat;
- the LLM call is recorded with the purpose `summarize`.

When the turn was started to consolidate (the conversation has CONSOLIDATE_AT summaries or more), it merges the oldest
CONSOLIDATE_BATCH into one (a plain-text call with `Instructions-Consolidate-Summaries`), expressed as
summarize tasks: a new summary over their combined range, and empty content for each merged id.

Either way the result is stored by the engine (`engine.tasks.received_apply`) in one transaction
with the node's completion, so a crash mid-turn stores nothing and a re-run writes no summary twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from conversations.models import Conversation, Message, TaskNode
from conversations.services.summaries import (
    CONSOLIDATE,
    CONSOLIDATE_AT,
    CONSOLIDATE_BATCH,
    messages_to_summarize,
)
from llm.calls import call_llm
from llm.conversation import agent_timezone, to_chat_messages
from llm.media import warm_media_descriptions
from llm.models import LLMCall
from llm.parsing import parse_reply
from llm.plan_result import PlanResult
from llm.prompt import build_plan_request
from llm.prompt.instructions import TurnContext
from llm.prompt.sections import role_prompt_texts
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route
from llm.tasks import Task
from memory.models import Summary, new_summary_id

SUMMARIZE_PROMPT = "Instructions-Summarize"
CONSOLIDATE_PROMPT = "Instructions-Consolidate-Summaries"
SUMMARY_KINDS = ("think", "summarize")

DEFAULT_SUMMARIZE = """This turn answers no one: nothing you write now is sent to the chat. The \
history above is an older stretch of this conversation that will soon drop out of your view. Write a \
summary of it with a `summarize` task, so that you still know what happened once it is gone.

- Keep what will matter later: who said what that matters, names, facts people shared about \
themselves, promises and plans, open questions, how the mood went, and anything you said you would do.
- Leave out small talk and anything your memories or notes already hold.
- Write plain prose, a paragraph or two, in your own voice as the one who was there.
- Give the range you covered as `min_message_id` and `max_message_id`.
- Your existing summaries are listed under "Conversation Summary", each with its `id`: to correct one, \
send a `summarize` task with its `id` and the new `content`.

Answer with a list of `summarize` tasks only, for example:

```json
[{"kind": "summarize", "content": "Sam told me about ...", "min_message_id": 120, \
"max_message_id": 180}]
```"""

DEFAULT_CONSOLIDATE = """Merge the conversation summaries below into one summary of the whole \
stretch they cover, in the order things happened. Keep every fact, name, promise and open question \
that still matters; drop repetition. Answer with the merged summary as plain text, one or two \
paragraphs, with no JSON and no heading."""


def summarize_instructions(agent, messages: list[Message]) -> str:
    text = role_prompt_texts(agent, [SUMMARIZE_PROMPT]).get(SUMMARIZE_PROMPT, DEFAULT_SUMMARIZE).strip()
    first, last = messages[0].message_id, messages[-1].message_id
    return f"{text}\n\nThe messages to summarize are message_id {first} to {last} ({len(messages)} messages)."


def summarize_turn(
    *,
    node: TaskNode,
    conversation: Conversation,
    route: Route,
    sleep: Callable[[float], None],
    deadline: float,
) -> PlanResult:
    """Plan one summarization (or consolidation) turn; the engine stores its summarize tasks."""
    agent = conversation.agent
    ids = dict(agent_id=agent.pk, conversation_id=conversation.pk, node_id=node.pk)
    summaries = list(
        Summary.objects.filter(
            agent=agent, channel_id=conversation.peer_id, topic_id=conversation.topic_id
        ).order_by("first_message_id", "created", "id")
    )
    plan = (node.graph.context or {}).get("summarize") or {}
    if plan.get("need") == CONSOLIDATE and len(summaries) >= CONSOLIDATE_AT:
        return _consolidate(
            agent, summaries[:CONSOLIDATE_BATCH], route=route, sleep=sleep, deadline=deadline, ids=ids
        )
    messages = messages_to_summarize(conversation, everything=bool(plan.get("everything")))
    if not messages:
        return PlanResult(notes=["nothing to summarize"])
    warm_media_descriptions(messages, sleep=sleep, deadline=deadline, **ids)
    history = to_chat_messages(messages, tz=agent_timezone(agent))
    turn = TurnContext(trigger="summarize", summarization=summarize_instructions(agent, messages))
    request = build_plan_request(
        conversation, turn, history=history, include_retrieve=False, kinds=SUMMARY_KINDS
    )
    reply = call_llm(
        request, route=route, purpose=LLMCall.Purpose.SUMMARIZE, sleep=sleep, deadline=deadline, **ids
    )
    if reply.status != "ok":
        reason = reply.finish_reason or "no reason given"
        return PlanResult(
            errors=[f"the LLM reply was {reply.status} ({reason})"], llm_call_ids=[reply.llm_call_id]
        )
    parsed = parse_reply(reply.text)
    tasks = summary_tasks(parsed.tasks, existing=summaries, messages=messages, notes=parsed.notes)
    return PlanResult(
        tasks=tasks, errors=list(parsed.errors), notes=list(parsed.notes), llm_call_ids=[reply.llm_call_id]
    )


def summary_tasks(
    tasks: list[Task], *, existing: list[Summary], messages: list[Message], notes: list[str]
) -> list[Task]:
    """Keep the summarize tasks of a summarization reply and complete the new ones.

    A new summary without a range covers the turn's messages; without dates, theirs (UTC days). A new
    summary without an id over exactly the range of an existing one updates it instead, so a result
    applied again (or a repeated turn) never leaves two summaries of the same messages.
    """
    by_id = {s.entry_id for s in existing}
    by_range = {(s.first_message_id, s.last_message_id): s.entry_id for s in existing}
    kept = []
    for task in tasks:
        if task.kind == "think":
            continue
        if task.kind != "summarize":
            notes.append(f"{task.kind} dropped: a summarization turn only writes summaries")
            continue
        if task.id not in by_id and (task.params.get("content") or "").strip():
            params = task.params
            params.setdefault("min_message_id", messages[0].message_id)
            params.setdefault("max_message_id", messages[-1].message_id)
            params.setdefault("first_message_date", messages[0].date.astimezone(dt.UTC).date().isoformat())
            params.setdefault("last_message_date", messages[-1].date.astimezone(dt.UTC).date().isoformat())
            if task.id is None:
                task.id = by_range.get((params["min_message_id"], params["max_message_id"]))
        kept.append(task)
    return kept


def _consolidate(
    agent, batch: list[Summary], *, route: Route, sleep: Callable[[float], None], deadline: float, ids: dict
) -> PlanResult:
    instructions = role_prompt_texts(agent, [CONSOLIDATE_PROMPT]).get(CONSOLIDATE_PROMPT, DEFAULT_CONSOLIDATE)
    texts = "\n\n".join(s.content.strip() for s in batch if s.content.strip())
    request = LLMRequest(
        system=instructions.strip(),
        turns=[Turn(role="user", parts=(Part(text="Summaries to consolidate:\n\n" + texts),))],
    )
    reply = call_llm(
        request, route=route, purpose=LLMCall.Purpose.SUMMARIZE, sleep=sleep, deadline=deadline, **ids
    )
    content = " ".join((reply.text or "").strip().strip("`").split()) if reply.status == "ok" else ""
    if not content:
        return PlanResult(
            errors=[f"consolidation answered nothing ({reply.status}); the summaries are kept"],
            llm_call_ids=[reply.llm_call_id],
        )
    first_ids = [s.first_message_id for s in batch if s.first_message_id is not None]
    last_ids = [s.last_message_id for s in batch if s.last_message_id is not None]
    first_dates = [s.first_message_date for s in batch if s.first_message_date]
    last_dates = [s.last_message_date for s in batch if s.last_message_date]
    params: dict = {"content": content}
    if first_ids:
        params["min_message_id"] = min(first_ids)
    if last_ids:
        params["max_message_id"] = max(last_ids)
    if first_dates:
        params["first_message_date"] = min(first_dates).isoformat()
    if last_dates:
        params["last_message_date"] = max(last_dates).isoformat()
    merged = Task(kind="summarize", params=params, id=new_summary_id())
    deletes = [Task(kind="summarize", params={"content": ""}, id=s.entry_id) for s in batch]
    note = f"consolidated {len(batch)} summaries into {merged.id}"
    return PlanResult(tasks=[merged, *deletes], notes=[note], llm_call_ids=[reply.llm_call_id])
