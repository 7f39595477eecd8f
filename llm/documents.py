"""`file:NAME` retrieval: the agent's own documents, and generated files registered by name.

A `retrieve` URL `file:NAME` never leaves the machine. Generated files are looked up first
(`file:schedule.json`: the agent's daily schedule as JSON, in the original's format); otherwise NAME
is one of the agent's documents (`agents.selectors.agent_document`). An unknown name is answered with a
short note, so the model learns the name is wrong instead of retrying it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from agents.models import Agent
from agents.selectors import agent_document

_GENERATED: dict[str, Callable[[Agent], str]] = {}


def register_file(name: str) -> Callable[[Callable[[Agent], str]], Callable[[Agent], str]]:
    def decorator(render: Callable[[Agent], str]) -> Callable[[Agent], str]:
        _GENERATED[name.lower()] = render
        return render

    return decorator


def file_content(*, agent: Agent, url: str) -> str:
    """The text a `file:NAME` URL shows the agent."""
    name = url[len("file:") :].strip().lstrip("/")
    render = _GENERATED.get(name.lower())
    if render is not None:
        return render(agent)
    content = agent_document(agent_id=agent.pk, name=name)
    if content is None:
        return f"There is no file named {name!r}."
    return content


@register_file("schedule.json")
def schedule_json(agent: Agent) -> str:
    """The daily schedule as the original's schedule.json: timezone and activities, oldest first."""
    from memory.models import ScheduleEntry
    from memory.stored_kinds import schedule_entry_json

    activities = [schedule_entry_json(e) for e in ScheduleEntry.objects.filter(agent=agent).order_by("start")]
    document = {"agent_name": agent.name, "timezone": agent.timezone or "", "activities": activities}
    return json.dumps(document, ensure_ascii=False, indent=2)
