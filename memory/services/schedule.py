"""The daily schedule's one placement rule: an entry may not overlap another entry of the same agent.

Entries are half-open intervals, so one may start exactly when the previous one ends. The agent's
`schedule` policy, the records API and the admin's schedule form all ask here, so the three cannot
drift apart; each words its own refusal around `clash_label`.
"""

from __future__ import annotations

import datetime as dt

from memory.models import ScheduleEntry


def schedule_clash(
    *, agent_id: int, start: dt.datetime, end: dt.datetime, entry_id: str = "", pk: int | None = None
) -> ScheduleEntry | None:
    """The earliest entry of the agent that [start, end) overlaps, or None when it fits.

    The entry being changed is left out of the comparison: by its `entry_id` (the task's id) or by its
    primary key (a form's instance); leave both empty for a new entry.
    """
    clashes = ScheduleEntry.objects.filter(agent_id=agent_id, start__lt=end, end__gt=start)
    if entry_id:
        clashes = clashes.exclude(entry_id=entry_id)
    if pk is not None:
        clashes = clashes.exclude(pk=pk)
    return clashes.order_by("start").first()


def clash_label(clash: ScheduleEntry) -> str:
    """The entry in the way, as refusals name it: `"Baking" (act-1, 2030-04-01 08:00-12:00)`."""
    return f'"{clash.activity}" ({clash.entry_id}, {clash.start:%Y-%m-%d %H:%M}-{clash.end:%H:%M})'
