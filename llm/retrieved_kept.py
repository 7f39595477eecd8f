"""Retrieved pages kept for the conversation's next turns, as the original keeps fetched resources.

The original keeps what a turn fetched for FETCHED_RESOURCE_LIFETIME_SECONDS (300 s) and carries it
into the next task graph, so a follow-up question needs no second fetch. Here each page stored in a
graph's `context["retrieved"]` has its `fetched_at`; a turn starts with the pages that the
conversation's earlier graphs fetched within CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS (0: none), the
newest fetch of each URL. They join the turn's own pages, which the prompt places after the history
(llm/prompt/builder.py), so the cached prefix is the same as without them. A kept page keeps its
first `fetched_at`: passing from graph to graph does not make it live longer.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.conf import settings

from conversations.models import TaskGraph
from llm.selectors import graph_contexts_since

#: The original's FETCHED_RESOURCE_LIFETIME_SECONDS.
DEFAULT_LIFETIME_SECONDS = 300
#: Earlier graphs read at most: a conversation has few turns within a lifetime.
MAX_GRAPHS = 10


def lifetime_seconds() -> int:
    return int(getattr(settings, "CINDY_FETCHED_RESOURCE_LIFETIME_SECONDS", DEFAULT_LIFETIME_SECONDS))


def _fetched_at(page: dict[str, Any]) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(page.get("fetched_at")))
    except ValueError:
        return None  # stored before pages had a time: not kept


def pages_kept(graph: TaskGraph, *, at: dt.datetime) -> list[dict[str, Any]]:
    """The pages earlier graphs of `graph`'s conversation fetched within the lifetime, oldest first."""
    lifetime = lifetime_seconds()
    if lifetime <= 0:
        return []
    cutoff = at - dt.timedelta(seconds=lifetime)
    contexts = graph_contexts_since(  # plain SQL: llm/selectors.py
        conversation_id=graph.conversation_id, graph_id=graph.pk, at=at, cutoff=cutoff, limit=MAX_GRAPHS
    )
    newest: dict[str, tuple[dt.datetime, dict[str, Any]]] = {}
    for context in contexts:
        for page in (context or {}).get("retrieved") or []:
            when = _fetched_at(page)
            url = page.get("url")
            if when is None or when < cutoff or not url:
                continue
            if url not in newest or newest[url][0] < when:
                newest[url] = (when, page)
    return [page for _when, page in sorted(newest.values(), key=lambda item: item[0])]
