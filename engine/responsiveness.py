"""How quickly an agent answers, from its daily schedule's responsiveness (0-100), as the original does.

- No schedule entry now: the configured read delay (CINDY_READ_DELAY_SECONDS) and the persona's
  `Asleep:` lines (`agents.schedule`) apply, as before.
- Responsiveness 1-100: the reply waits about 4 s at 100 and about 120 s at 1, linearly between.
- Responsiveness 0: the agent is asleep until the entry (and any directly following 0 entries) ends;
  nothing runs and messages stay unread until then (the chat is read when the turn runs).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from agents.models import Agent
from agents.schedule import asleep_until as asleep_by_persona
from cindy_site.lookups import Ids
from memory.models import ScheduleEntry
from memory.selectors import schedule_entry_covering

FASTEST_SECONDS = 4.0  # responsiveness 100
SLOWEST_SECONDS = 120.0  # responsiveness 1


def current_entry(*, agent_id: int, at: dt.datetime) -> ScheduleEntry | None:
    """The schedule entry covering `at`, if any (the earliest started; plain SQL, memory/selectors.py)."""
    return schedule_entry_covering(agent_id=agent_id, at=at)


def responsiveness_delay(responsiveness: int) -> dt.timedelta:
    """The reply delay for a responsiveness of 1 to 100 (0 means asleep: see `asleep_until`)."""
    level = min(max(responsiveness, 1), 100)
    seconds = FASTEST_SECONDS + (100 - level) * (SLOWEST_SECONDS - FASTEST_SECONDS) / 99
    return dt.timedelta(seconds=seconds)


def asleep_until(*, agent: Agent, at: dt.datetime) -> dt.datetime | None:
    """When the agent wakes if it is asleep at `at` (schedule responsiveness 0, or `Asleep:` lines)."""
    return _asleep_given(agent, current_entry(agent_id=agent.pk, at=at), at=at)


def agents_asleep(*, agents: Iterable[Agent], at: dt.datetime) -> set[int]:
    """The ids of `agents` asleep at `at`, as `asleep_until` decides, with one query for all of them
    (the gateway asks this for every agent at every tick)."""
    agents = list(agents)
    if not agents:
        return set()
    if len(agents) == 1:  # the usual tick: one agent with a node to start
        asleep = _asleep_given(agents[0], current_entry(agent_id=agents[0].pk, at=at), at=at) is not None
        return {agents[0].pk} if asleep else set()
    entries: dict[int, ScheduleEntry] = {}
    covering = ScheduleEntry.objects.filter(
        agent_id__in_ids=Ids([a.id for a in agents]), start__lte=at, end__gt=at
    )
    for entry in covering.order_by("start"):
        entries.setdefault(entry.agent_id, entry)  # the earliest start, as `current_entry` picks
    # `id`, not `pk` (a property): the gateway asks this of every held agent every few seconds.
    return {agent.id for agent in agents if _asleep_given(agent, entries.get(agent.id), at=at) is not None}


def _asleep_given(agent: Agent, entry: ScheduleEntry | None, *, at: dt.datetime) -> dt.datetime | None:
    """`asleep_until` once the entry covering `at` (or None) is known."""
    if entry is None:
        return asleep_by_persona(schedule=agent.daily_schedule, timezone=agent.timezone, when=at)
    if entry.responsiveness > 0:
        return None
    wake = entry.end
    for following in ScheduleEntry.objects.filter(agent_id=agent.pk, start__gte=wake).order_by("start")[:48]:
        if following.start != wake or following.responsiveness > 0:
            break
        wake = following.end
    return wake


def reply_not_before(
    *, agent: Agent, seen_at: dt.datetime, default_delay: dt.timedelta, at: dt.datetime
) -> dt.datetime:
    """When a turn answering something seen at `seen_at` may start."""
    entry = current_entry(agent_id=agent.pk, at=at)  # read once, for both questions
    wake = _asleep_given(agent, entry, at=at)
    if wake is not None:
        return wake
    delay = responsiveness_delay(entry.responsiveness) if entry is not None else default_delay
    return max(at, seen_at + delay)
