"""The JSON schema a reply must follow, built from the kinds the agent's prompts teach.

A prompt declares the task kinds it teaches with a marker comment, as in the original system:

    <!-- SCHEMA_TASKS: send, react, sticker -->

A turn's reply schema allows the kinds its included prompts teach (the response-format
instructions and the agent's role prompts), as the original builds it from the whole system prompt:

- a prompt teaches the kinds its markers name, and a prompt without a marker teaches none;
- the `Instructions` prompt always teaches the conversational kinds (`CONVERSATIONAL_KINDS`), marker
  or not, so every persona can send whatever else its prompts say.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from llm.tasks import KIND_ALIASES, known_kinds
from memory.stored_kinds import stored_kinds

_MARKER = re.compile(r"<!--\s*SCHEMA_TASKS\s*:(.{0,2000}?)-->", re.IGNORECASE | re.DOTALL)

#: The shared response-format prompt, included in every turn.
INSTRUCTIONS_PROMPT = "Instructions"
#: What the Instructions prompt teaches in any case: the original's Instructions.md marker.
CONVERSATIONAL_KINDS = ("send", "react", "sticker", "wait", "block", "unblock", "think")


def kinds_from_prompt(text: str) -> set[str]:
    """The kinds named by the SCHEMA_TASKS markers in one prompt (the marker name is case-insensitive)."""
    found: set[str] = set()
    for match in _MARKER.finditer(text or ""):
        names = (name.strip().lower() for name in match.group(1).split(",") if name.strip())
        found.update(KIND_ALIASES.get(name, name) for name in names)
    return found


def prompt_teaches(name: str, text: str) -> set[str]:
    """The kinds one prompt teaches: its markers, plus the conversational kinds for Instructions."""
    taught = kinds_from_prompt(text)
    if name == INSTRUCTIONS_PROMPT:
        taught.update(CONVERSATIONAL_KINDS)
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

    `kinds` limits the `kind` enum (None: every known kind).
    """
    allowed = known_kinds() if kinds is None else tuple(k for k in known_kinds() if k in set(kinds))
    string = {"type": "STRING"}
    integer = {"type": "INTEGER", "nullable": True}
    properties = {
        "kind": {"type": "STRING", "enum": list(allowed)},
        "id": string,
        "depends_on": {"type": "ARRAY", "items": string},
        "text": string,
        "reply_to": integer,
        "sticker_set": string,
        "name": string,
        "emoji": string,
        "message_id": integer,
        "delay": {"type": "NUMBER"},
        "content": string,
        "created": string,
        "urls": {"type": "ARRAY", "items": string},
        # initiative kinds: xsend, event, schedule, send_media
        "target_channel_id": integer,
        "intent": string,
        "time": string,
        "timezone": string,
        "interval": string,
        "occurrences": integer,
        "start_time": string,
        "end_time": string,
        "activity_name": string,
        "description": string,
        "responsiveness": integer,
        "unique_id": string,
    }
    if "image" in allowed:  # only then, so the schema of a persona without pictures stays as it was
        properties["references"] = {"type": "ARRAY", "items": string}
    for spec in stored_kinds():  # the stored kinds' declared fields (summarize: min_message_id, ...)
        for param in spec.params:
            properties.setdefault(param.name, integer if param.type == "int" else string)
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
