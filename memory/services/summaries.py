"""Reading and clearing a conversation's summaries; writing them goes through `stored_entry_apply`.

A channel is a Telegram peer id and, in a forum group, a topic (`topic_id`, 0 for none): each forum
topic has summaries and plans of its own."""

from __future__ import annotations

from cindy_site.prepared import PreparedRead
from memory.models import Plan, Summary

#: Read by every turn (cindy_site/prepared.py): the greatest id, as MAX(last_message_id) gives it.
_covered = PreparedRead(
    lambda agent_id, channel_id, topic_id: Summary.objects.filter(
        agent_id=agent_id, channel_id=channel_id, topic_id=topic_id, last_message_id__isnull=False
    )
    .order_by("-last_message_id")
    .values_list("last_message_id", flat=True)[:1],
    int,
    int,
    int,
)


def summary_covered_id(*, agent_id: int, channel_id: int, topic_id: int = 0) -> int | None:
    """The highest message id a summary of this channel covers (None without summaries)."""
    return _covered.first(int(agent_id), int(channel_id), int(topic_id or 0))


def summary_count(*, agent_id: int, channel_id: int, topic_id: int = 0) -> int:
    return Summary.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).count()


def summaries_clear(*, agent_id: int, channel_id: int, plans: bool = False, topic_id: int = 0) -> int:
    """Delete the channel's summaries (and its plans, with `plans`). Returns the rows deleted."""
    deleted, _ = Summary.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).delete()
    if plans:
        more, _ = Plan.objects.filter(agent_id=agent_id, channel_id=channel_id, topic_id=topic_id).delete()
        deleted += more
    return deleted
