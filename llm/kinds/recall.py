"""`recall`: `{"kind": "recall", "query": "..."}`, a search of what the agent has seen (the recall
index, docs/recall.md) that planning runs before it asks the LLM again, with the hits shown.

params: query (text with at least one word to search for; a missing, empty or non-text query is
dropped with an error naming the field and the fix).
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import STRING, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import TaskError, clean_text, short_repr
from recall.stemming import words

#: The longest query kept; a longer one is cut (the index reads at most 32 words of it anyway).
MAX_QUERY_CHARS = 500


def read_legacy(body: str, number: int | None) -> dict[str, Any]:
    return {"query": body.strip()}


def validate(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    query = raw.get("query")
    if query is None:
        raise TaskError(
            '"query" is missing: give the words to search for, e.g. {"kind": "recall", "query": "Ada\'s cat"}'
        )
    if not isinstance(query, str):
        raise TaskError(f'"query" is {short_repr(query)}, not text: give the words to search for as a string')
    query = clean_text(query.strip(), notes, "recall query")[:MAX_QUERY_CHARS]
    if not words(query):
        raise TaskError(
            f'"query" is {short_repr(query)}: it has no words to search for; give one or more words (letters or digits)'
        )
    return {"query": query}


RECALL = register(
    TaskKind(
        name="recall",
        validate=validate,
        policy=Ordinary(in_schedule_turn=True),
        runs="planning",
        taught_fields={"query": STRING},
        read_legacy=read_legacy,
    )
)
