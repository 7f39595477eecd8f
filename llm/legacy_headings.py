"""Whether a reply holds the legacy Markdown task headings (`# «kind»`), without reading its blocks:
what `llm.legacy_markdown` and the reply parser decide on, and what the OpenAI-compatible provider
checks to tell a server that ignored `response_format` (it imports nothing of the task kinds)."""

from __future__ import annotations

import re

_ANY_HEADING = re.compile(r"^# «[^»\n]+»", re.MULTILINE)


def is_legacy(text: str) -> bool:
    """True when the original would read `text` as Markdown task blocks: it starts with `# ` and has
    a task heading (a reply that only starts with a Markdown title may still hold task JSON)."""
    text = unwrap_reply(text)
    return text.startswith("# ") and _ANY_HEADING.search(text) is not None


def has_task_heading(text: str) -> bool:
    """True when `text` holds at least one `# «kind»` task heading: only then is text outside JSON
    read as task blocks (text before the first heading being a `send`, as the original read it)."""
    return _ANY_HEADING.search(unwrap_reply(text)) is not None


def unwrap_reply(text: str) -> str:
    """The reply without a ```` ```markdown ```` fence around all of it."""
    if text.startswith("```markdown\n"):
        if text.endswith("```\n"):
            return text.removeprefix("```markdown\n").removesuffix("```\n")
        if text.endswith("```"):
            return text.removeprefix("```markdown\n").removesuffix("```")
    return text
