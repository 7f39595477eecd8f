"""The JSON schema a reply must follow, built from the kinds the agent's prompts teach.

A role prompt declares the task kinds it teaches with a marker comment, as in the original system:

    <!-- SCHEMA_TASKS: send, react, sticker -->

The schema of an agent's replies allows the union of the kinds named by the prompts it includes
(the response-format instructions and its role prompts). Prompts written before markers existed name
none: when no included prompt has a marker, every kind is allowed, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from llm.tasks import known_kinds
from memory.stored_kinds import stored_kinds

_MARKER = re.compile(r"<!--\s*SCHEMA_TASKS\s*:(.{0,2000}?)-->", re.IGNORECASE | re.DOTALL)


def kinds_from_prompt(text: str) -> set[str]:
    """The kinds named by the SCHEMA_TASKS markers in one prompt (the marker name is case-insensitive)."""
    found: set[str] = set()
    for match in _MARKER.finditer(text or ""):
        found.update(name.strip().lower() for name in match.group(1).split(",") if name.strip())
    return found


def allowed_kinds(prompt_texts: Iterable[str]) -> tuple[str, ...] | None:
    """The kinds the prompts teach, in the canonical order; None (all kinds) when no prompt has a marker.

    Names that are not task kinds are ignored.
    """
    named: set[str] = set()
    marked = False
    for text in prompt_texts:
        if _MARKER.search(text or ""):
            marked = True
            named |= kinds_from_prompt(text)
    if not marked:
        return None
    return tuple(kind for kind in known_kinds() if kind in named)


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
    }
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
