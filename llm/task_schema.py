"""The JSON schema a reply must follow, built from the kinds the agent's prompts teach.

A prompt declares the task kinds it teaches with a marker comment, as in the original system:

    <!-- SCHEMA_TASKS: send, react, sticker -->

A turn's reply schema allows the kinds its included prompts teach (the response-format
instructions and the agent's role prompts), as the original builds it from the whole system prompt:

- a prompt teaches the kinds its markers name, and a prompt without a marker teaches none;
- the `Instructions` prompt always teaches the conversational kinds (those declared `conversational`
  in `llm.kinds`), marker or not, so every persona can send whatever else its prompts say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from llm.kinds import aliases, task_kinds
from llm.kinds.base import STRING, STRINGS
from llm.tasks import known_kinds

_MARKER = re.compile(r"<!--\s*SCHEMA_TASKS\s*:(.{0,2000}?)-->", re.IGNORECASE | re.DOTALL)

#: The shared response-format prompt, included in every turn.
INSTRUCTIONS_PROMPT = "Instructions"

#: The order of the reply schema's properties. The schema is part of every request's cached prefix, so
#: it keeps this order whatever order the kinds register in; a field not named here (a new kind's)
#: follows these, in the order of the kinds.
FIELD_ORDER = (
    "kind",
    "id",
    "depends_on",
    "text",
    "reply_to",
    "sticker_set",
    "name",
    "emoji",
    "message_id",
    "delay",
    "content",
    "created",
    "urls",
    "target_channel_id",
    "intent",
    "time",
    "timezone",
    "interval",
    "occurrences",
    "start_time",
    "end_time",
    "activity_name",
    "description",
    "responsiveness",
    "unique_id",
    "references",
    "min_message_id",
    "max_message_id",
    "first_message_date",
    "last_message_date",
    "query",
)


def conversational_kinds() -> tuple[str, ...]:
    """What the Instructions prompt teaches in any case: the original's Instructions.md marker."""
    return tuple(kind.name for kind in task_kinds() if kind.conversational)


def kinds_from_prompt(text: str) -> set[str]:
    """The kinds named by the SCHEMA_TASKS markers in one prompt (the marker name is case-insensitive)."""
    found: set[str] = set()
    older = aliases()
    for match in _MARKER.finditer(text or ""):
        names = (name.strip().lower() for name in match.group(1).split(",") if name.strip())
        found.update(older.get(name, name) for name in names)
    return found


def prompt_teaches(name: str, text: str) -> set[str]:
    """The kinds one prompt teaches: its markers, plus the conversational kinds for Instructions."""
    taught = kinds_from_prompt(text)
    if name == INSTRUCTIONS_PROMPT:
        taught.update(conversational_kinds())
    return taught


def taught_kinds(prompts: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """The kinds a turn's prompts, as (name, text), teach together, in the canonical order.

    Names that are not task kinds are ignored.
    """
    taught: set[str] = set()
    for name, text in prompts:
        taught |= prompt_teaches(name, text)
    return tuple(kind for kind in known_kinds() if kind in taught)


def task_list_schema(kinds: Iterable[str] | None = None) -> dict[str, Any]:
    """The reply schema in the OpenAPI subset Gemini's response_schema accepts.

    `kinds` limits the `kind` enum (None: every known kind). The properties are every kind's fields
    (a kind's `taught_fields` only when it is allowed), whichever kinds are allowed.
    """
    every = task_kinds()
    wanted = None if kinds is None else set(kinds)
    allowed = tuple(kind for kind in every if wanted is None or kind.name in wanted)
    fields: dict[str, dict[str, Any]] = {
        "kind": {"type": "STRING", "enum": [kind.name for kind in allowed]},
        "id": STRING,
        "depends_on": STRINGS,
    }
    for kind in every:
        for name, fragment in kind.fields.items():
            fields.setdefault(name, fragment)
    for kind in allowed:
        for name, fragment in kind.taught_fields.items():
            fields.setdefault(name, fragment)
    rank = {name: index for index, name in enumerate(FIELD_ORDER)}
    properties = dict(sorted(fields.items(), key=lambda item: rank.get(item[0], len(rank))))
    return {
        "type": "ARRAY",
        "items": {
            "type": "OBJECT",
            "properties": properties,
            "required": ["kind"],
            "propertyOrdering": list(properties),
        },
    }


def schema_kinds(schema: dict[str, Any] | None) -> tuple[str, ...]:
    """The kinds a schema made by `task_list_schema` allows (every known kind without a schema)."""
    if not schema:
        return known_kinds()
    return tuple(schema["items"]["properties"]["kind"]["enum"])
