"""`retrieve`: `{"kind": "retrieve", "urls": ["https://..."]}` (`url` is an older name), pages or the
agent's own documents (`file:NAME`) that planning fetches before it asks the LLM again.

params: urls (checked, duplicates removed; an empty list asks for nothing and is dropped silently, as
the original does).
"""

from __future__ import annotations

from typing import Any

from llm.kinds.base import STRINGS, TaskKind
from llm.kinds.policies import Ordinary
from llm.kinds.registry import register
from llm.task_fields import retrieve_urls

#: Pages fetched per retrieve round; further URLs are skipped and the model is told so.
MAX_RETRIEVE_URLS = 3


def read_legacy(body: str, number: int | None) -> dict[str, Any] | None:
    """The body lines that are URLs; a block without one fetches nothing and is dropped, as the
    original does."""
    urls = [u.strip() for u in body.splitlines() if u.strip().startswith(("http://", "https://", "file:"))]
    return {"urls": urls} if urls else None


def validate(raw: dict[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    urls = retrieve_urls(raw, notes)
    return [{"urls": urls}] if urls else []


RETRIEVE = register(
    TaskKind(
        name="retrieve",
        validate=validate,
        policy=Ordinary(in_schedule_turn=True),
        runs="planning",
        fields={"urls": STRINGS},
        read_legacy=read_legacy,
    )
)
