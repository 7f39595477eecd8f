"""The dashboard's search of an agent's past (the recall index, recall/): on the agent's page every
conversation of the agent, on a conversation's page that conversation's scope. The hits are limited
to the kinds of record the user may read, as the API limits them (`recall.access`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from agents.models import Agent
from conversations.models import Conversation
from recall.access import KIND_PERMS, refusal, searchable_kinds
from recall.selectors import MAX_QUERY_CHARS, RecallQueryError, recall_search

#: Hits shown for one search.
SEARCH_LIMIT = 30


def search_results(
    request: HttpRequest, agent: Agent, conversation: Conversation | None = None
) -> dict[str, Any]:
    """What the search part of a page shows: the query, its hits (best first, each with its
    conversation when it has one), or why there are none. No `q` in the request: nothing searched."""
    query = request.GET.get("q")
    found: dict[str, Any] = {
        "query": query or "",
        "searched": False,
        "hits": [],
        "error": "",
        "refused": False,
        "max_chars": MAX_QUERY_CHARS,
    }
    if query is None:
        return found
    kinds = searchable_kinds(request.user, agent)
    if not kinds:
        found["error"], found["refused"] = refusal(request.user, agent), True
        return found
    if len(query) > MAX_QUERY_CHARS:
        found["error"] = (
            f"the query is {len(query)} characters long: search with at most {MAX_QUERY_CHARS} characters"
        )
        return found
    try:
        hits = recall_search(
            agent_id=agent.pk, query=query, conversation=conversation, limit=SEARCH_LIMIT, kinds=kinds
        )
    except RecallQueryError as error:
        found["error"] = str(error)
        return found
    chats = Conversation.objects.select_related("agent").in_bulk(
        {hit.conversation_id for hit in hits if hit.conversation_id is not None}
    )
    found["searched"] = True
    found["hits"] = [{"hit": hit, "conversation": chats.get(hit.conversation_id)} for hit in hits]
    found["kinds"] = sorted(kinds)
    found["all_kinds"] = len(kinds) == len(KIND_PERMS)
    return found
