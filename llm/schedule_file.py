"""`file:schedule.json`: the agent's daily schedule as the original's schedule.json, for retrieve tasks."""

from __future__ import annotations

import json

from llm.file_sources import register_file_source

SCHEDULE_FILE = "schedule.json"


def schedule_json(agent_id: int, name: str) -> str:
    """The schedule document: agent name, timezone and its activities, earliest first; for an agent
    without a "Daily Schedule", a line saying so."""
    from agents.models import Agent
    from memory.models import ScheduleEntry
    from memory.stored_kinds import schedule_entry_json

    agent = Agent.objects.filter(pk=agent_id).only("name", "timezone", "daily_schedule").first()
    if agent is None or not (agent.daily_schedule or "").strip():
        # As the original: a text, not JSON, so the schedule prompt is not switched on.
        return "You do not have a daily schedule configured."
    entries = ScheduleEntry.objects.filter(agent_id=agent_id).order_by("start")
    document = {
        "agent_name": agent.name,
        "timezone": agent.timezone,
        "activities": [schedule_entry_json(entry) for entry in entries],
    }
    return json.dumps(document, ensure_ascii=False, indent=2)


register_file_source(SCHEDULE_FILE, schedule_json)
