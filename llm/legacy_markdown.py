"""The legacy Markdown reply format, read the way the original system read it before it switched to JSON.

A reply is a sequence of task blocks. A block starts at a line that begins exactly with `# «kind»`,
optionally followed by a number (the message to reply to; for `xsend`, the target chat), and its body
runs to the next such line:

    # «send» 1234
    Hello there!

    # «wait»
    delay: 10

Each kind's module reads the body of its own block (`read_legacy`, `llm.kinds`); a kind without a
reader is the bare kind.

Rules kept from the original:

- A reply wrapped whole in a ```` ```markdown ```` fence is unwrapped first.
- A reply that does not start with `# ` but holds task headings further down: the text before the
  first task heading becomes one send, and each heading starts its own block. (A reply with no task
  heading at all is not read here: Cindy sends nothing of it, see `llm.parsing`.)
- A body that starts with a ```` ```markdown ```` fence is unwrapped (a `remember` body also from a
  ```` ```json ```` or bare fence).
- `wait` needs a `delay: <seconds>` line in its body; `sticker` takes the set on its first line and the
  sticker on its second; `retrieve` keeps the body lines that are URLs; `think` is private.

Where Cindy goes further (see docs/compatibility.md): `react` (`# «react» <message id>` + emoji) and
`plan` blocks, and a sticker block with only the sticker's name (the agent's first sticker set).
"""

from __future__ import annotations

import re
from typing import Any

from llm.kinds import task_kind
from llm.kinds.base import unfence
from llm.legacy_headings import has_task_heading, is_legacy, unwrap_reply
from llm.task_fields import TaskError

__all__ = ["HEADING", "has_task_heading", "is_legacy", "parse_legacy", "unwrap_reply"]

#: The original's heading rule: at the start of a line, `# «kind»`, then optionally a (signed) number.
HEADING = re.compile(r"# «([^»]+)»(?:\s+(-?\d+))?")


def parse_legacy(text: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Markdown task blocks → (raw task dicts, validated later like JSON tasks; error lines)."""
    text = unwrap_reply(text)
    if not text.startswith("# "):
        text = "# «send»\n\n" + text
    tasks: list[dict[str, Any]] = []
    errors: list[str] = []
    kind: str | None = None
    number: int | None = None
    body: list[str] = []
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading is None:
            body.append(line)
            continue
        _flush(kind, number, body, tasks, errors)
        kind = heading.group(1).strip().lower()
        number = int(heading.group(2)) if heading.group(2) and len(heading.group(2)) <= 20 else None
        body = []
    _flush(kind, number, body, tasks, errors)
    return tasks, errors


def _flush(
    kind: str | None, number: int | None, lines: list[str], tasks: list[dict[str, Any]], errors: list[str]
) -> None:
    if kind is None:
        return  # text before the first heading of a reply that starts with "# " is not a task
    body = unfence("\n".join(lines).strip(), "markdown")
    where = f"block {len(tasks) + len(errors) + 1} (# «{kind}»)"
    task: dict[str, Any] = {"kind": kind}
    declared = task_kind(kind)
    if declared is not None and declared.read_legacy is not None:
        try:
            fields = declared.read_legacy(body, number)
        except TaskError as exc:
            errors.append(f"{where}: {exc}")
            return
        if fields is None:
            return
        task.update(fields)
    tasks.append(task)
