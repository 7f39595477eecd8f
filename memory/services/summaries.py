"""Reading and clearing a conversation's summaries; writing them goes through `stored_entry_apply`.

A channel is a Telegram peer id and, in a forum group, a topic (`topic_id`, 0 for none): each forum
topic has summaries and plans of its own."""

from __future__ import annotations

from memory.models import Plan, Summary
from memory.selectors import summary_covered_id

__all__ = ["summaries_clear", "summary_count", "summary_covered_id"]


def summary_count(*, agent_id: int, channel_id: int, topic_id: int = 0) -> int:
    return Summary.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).count()


def summaries_clear(*, agent_id: int, channel_id: int, plans: bool = False, topic_id: int = 0) -> int:
    """Delete the channel's summaries (and its plans, with `plans`). Returns the rows deleted."""
    deleted, _ = Summary.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).delete()
    if plans:
        more, _ = Plan.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).delete()
        deleted += more
    return deleted
