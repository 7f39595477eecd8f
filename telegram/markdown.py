"""The LLM's Telegram markdown turned into plain text plus message entities.

`**bold**`, `__italic__`, `~~strike~~`, `` `code` ``, ```` ```pre``` ```` and `[text](url)` become
entities, the way Telegram clients send formatted text; the delimiters disappear from the text.
"""

from __future__ import annotations

from telethon.extensions import markdown
from telethon.tl import types

Entity = types.TypeMessageEntity


def to_entities(text: str) -> tuple[str, list[Entity]]:
    plain, entities = markdown.parse(text)
    return plain, list(entities)
