"""Role prompts that a file in the turn's context switches on, as the original does.

The original adds `Task-Schedule` to a turn once `file:schedule.json` is in its context (as a JSON
object, not an error text), so a persona with a `Daily Schedule` reads its schedule first and may then
change it. The prompt's SCHEMA_TASKS marker then lets the reply schema accept `schedule` tasks, through
the same computation as every other role prompt.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agents.models import Agent
from llm.file_sources import file_url_name, is_file_url

SCHEDULE_PROMPT = "Task-Schedule"
SCHEDULE_FILE = "schedule.json"

#: Used when no `Task-Schedule` prompt is imported (the original ships one in configdir/prompts).
DEFAULT_SCHEDULE_PROMPT = """<!-- SCHEMA_TASKS: schedule -->

# Schedule

Your schedule (`file:schedule.json`) is in your context. To add an activity, give a `schedule` task
`start_time` and `end_time` (ISO 8601 with an offset), `activity_name`, `responsiveness` (0 to 100) and
`description`; the same `id` updates an activity, and an empty `activity_name` deletes it. Activities
must not overlap."""


def prompts_unlocked_by_context(
    agent: Agent, retrieved: Sequence, present: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """(name, text) of the role prompts the retrieved pages switch on, not already `present`."""
    if SCHEDULE_PROMPT in {name for name, _text in present} or not _has_schedule(retrieved):
        return []
    from llm.prompt.sections import role_prompt_texts

    text = role_prompt_texts(agent, [SCHEDULE_PROMPT]).get(SCHEDULE_PROMPT) or DEFAULT_SCHEDULE_PROMPT
    return [(SCHEDULE_PROMPT, text)]


def _has_schedule(retrieved: Sequence) -> bool:
    for page in retrieved:
        if is_file_url(page.url) and file_url_name(page.url) == SCHEDULE_FILE:
            try:
                return isinstance(json.loads(page.content), dict)
            except ValueError:
                return False
    return False
