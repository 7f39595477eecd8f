"""What planning one turn hands back to the engine, for a reply turn (`llm.planning`) and a
summarization turn (`llm.summarization`) alike."""

from __future__ import annotations

from dataclasses import dataclass, field

from llm.tasks import Task


@dataclass
class PlanResult:
    tasks: list[Task] = field(
        default_factory=list
    )  # LLM order; think dropped, retrieve resolved, refusals removed
    errors: list[str] = field(default_factory=list)  # invalid or unknown tasks, never executed
    notes: list[str] = field(default_factory=list)  # tasks dropped or bounded (empty send, long wait)
    #: What a provider worked around on the turn's calls (an endpoint that refused `response_format`):
    #: no task changed, and each call's row and `llm_call` activity line already say it.
    call_notes: list[str] = field(default_factory=list)
    llm_call_ids: list[int] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)  # the final reply's think texts, for the task log
    refused: list[str] = field(default_factory=list)  # "kind: reason" of tasks the policy refused
    #: The route whose reply was planned ("openai/gpt-5-mini", naming the routes that failed before a
    #: fallback), for the turn's activity line; empty when no call was made.
    answered_by: str = ""
