"""The reply schema as JSON Schema, for providers that take JSON Schema rather than Gemini's subset:
Anthropic (the reply tool's `input_schema`) and OpenAI-compatible endpoints (`response_format`)."""

from __future__ import annotations

import json
from typing import Any

#: The property of the object that holds a reply whose schema is not an object (the task list): tool
#: inputs and many servers' `response_format` want an object at the root.
WRAPPED_FIELD = "tasks"


def json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A reply schema in the OpenAPI subset Gemini takes (`llm.task_schema`: upper-case types,
    `nullable`, `propertyOrdering`) as JSON Schema; a schema already in JSON Schema comes back the
    same."""
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "propertyOrdering":
            continue  # the properties keep their order in the JSON object
        if key == "type" and isinstance(value, str):
            converted["type"] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            converted["properties"] = {name: json_schema(field) for name, field in value.items()}
        elif key == "items" and isinstance(value, dict):
            converted["items"] = json_schema(value)
        elif key != "nullable":
            converted[key] = value
    if schema.get("nullable") and isinstance(converted.get("type"), str):
        converted["type"] = [converted["type"], "null"]
    return converted


def object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as JSON Schema with an object at its root: itself when it is one, else an object whose
    one required property `tasks` is the schema."""
    converted = json_schema(schema)
    if converted.get("type") == "object":
        return converted
    return {"type": "object", "properties": {WRAPPED_FIELD: converted}, "required": [WRAPPED_FIELD]}


def is_wrapped(schema: dict[str, Any] | None) -> bool:
    """Whether `object_schema` wraps `schema` (its root is not an object)."""
    return schema is not None and json_schema(schema).get("type") != "object"


def unwrapped_text(text: str) -> str:
    """A reply to a wrapped schema as the schema's own JSON (`{"tasks": [...]}` → `[...]`); any other
    text comes back unchanged, for the reply parser to read."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, dict) and set(value) == {WRAPPED_FIELD}:
        return json.dumps(value[WRAPPED_FIELD], ensure_ascii=False)
    return text
