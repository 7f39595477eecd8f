"""Changing an agent's timezone while records hold local times in it.

An agent's future events and schedule entries were written in its local time ("09:00"), but they are
stored as UTC instants. When the timezone changes, the operator says what those records mean:

- `keep_local_times`: they keep their clock times in the new zone (a 09:00 event stays at 09:00 and
  so moves to another instant);
- `keep_instants`: they stay at the same moments (the 09:00 event now reads 18:00 in the new zone).

`agents` knows nothing about the apps that keep such records, so they register here (from their
`AppConfig.ready()`) a function that says what the agent holds: `memory` its events and schedule.
The change itself is announced with `agents.signals.agent_timezone_changed`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import models

if TYPE_CHECKING:
    from agents.models import Agent

#: The request field (API) and form field (admin) that carries the choice.
FIELD = "timezone_change"


class TimezoneChange(models.TextChoices):
    KEEP_LOCAL_TIMES = "keep_local_times", "Keep the local times (move the instants)"
    KEEP_INSTANTS = "keep_instants", "Keep the instants (the local times shift)"


_sources: list[Callable[[Agent], list[str]]] = []


def local_time_records_provide(source: Callable[[Agent], list[str]]) -> None:
    """Register `source(agent)`: descriptions of the agent's future records kept in its local time,
    e.g. ["2 future events"], empty when it has none."""
    if source not in _sources:
        _sources.append(source)


def local_time_records(*, agent: Agent) -> list[str]:
    """What the agent holds in its local time now, as the registered apps describe it."""
    return [text for source in _sources for text in source(agent)]


def timezone_change_check(*, agent: Agent, before: str | None, change: str) -> list[str]:
    """The records the change from `before` to `agent.timezone` concerns; ValidationError on
    `timezone_change` when there are some and no (or no known) choice was made.

    `before` is the stored timezone (None for a new agent, which holds no records yet).
    """
    if before is None or before == agent.timezone:
        return []
    bound = local_time_records(agent=agent)
    if change and change not in TimezoneChange.values:
        raise ValidationError(
            {FIELD: f'"{change}" is not a choice: use {" or ".join(TimezoneChange.values)}'}
        )
    if bound and not change:
        raise ValidationError(
            {
                FIELD: f"{agent.name} has {' and '.join(bound)} written in its local time "
                f"({before or 'the default zone'}): choose keep_local_times (they keep their clock times "
                f"in {agent.timezone or 'the default zone'}) or keep_instants (they stay at the same moments)"
            }
        )
    return bound
