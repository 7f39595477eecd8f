"""Downloads of a conversation: Markdown, and one self-contained HTML file (images inlined).

Text from Telegram and the LLM is data: the HTML goes through the autoescaping template, and in
Markdown `<`, `>` and `&` become entities so that a viewer renders them as text, not as markup.
"""

from __future__ import annotations

import re
from typing import Any

from django.template.loader import render_to_string
from django.utils.text import slugify

from conversations.models import Conversation

_LINE_START = re.compile(r"^([#>*+\-=`|]|\d+\.)", re.M)


def md_text(text: str) -> str:
    """Inert Markdown for untrusted text: HTML entities, and block markers at line starts escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _LINE_START.sub(r"\\\1", text)
    return re.sub(r"([\[\]!_*`])", r"\\\1", text)


def conversation_title(conversation: Conversation) -> str:
    return f"{conversation.agent.name} ↔ {conversation.display_title}"


def export_filename(conversation: Conversation, extension: str) -> str:
    stem = slugify(f"{conversation.agent.name}-{conversation.display_title}") or "conversation"
    return f"{stem}-{conversation.pk}.{extension}"


def transcript_markdown(conversation: Conversation, entries: list[dict[str, Any]]) -> str:
    lines = [f"# {md_text(conversation_title(conversation))}", ""]
    lines.append(f"{conversation.get_kind_display()} · peer id {conversation.peer_id}")
    lines.append("")
    for entry in entries:
        if entry["type"] == "message":
            flags = [
                label for label, on in (("edited", entry["edited"]), ("deleted", entry["deleted"])) if on
            ]
            reply = f" · reply to #{entry['reply_to_id']}" if entry["reply_to_id"] else ""
            suffix = f" ({', '.join(flags)})" if flags else ""
            lines.append(
                f"**{md_text(entry['who'])}** · #{entry['message_id']} · {entry['local_time']}{reply}{suffix}"
            )
            lines.append("")
            if entry["text"]:
                lines += [f"> {md_text(line)}" if line else ">" for line in entry["text"].splitlines()]
                lines.append("")
            for media in entry["media"]:
                label = md_text(media["label"])
                lines.append(f"![{label}]({media['data_uri']})" if media["data_uri"] else f"_{label}_")
                lines.append("")
        else:
            head = f"- `{entry['kind']}` #{entry['node_id'] or '-'} {entry['status']} · {entry['local_time']}"
            if entry["text"]:
                head += f" · {md_text(entry['text'])}"
            lines.append(head)
            lines += [f"  - {name}: {md_text(text)}" for name, text in entry["lines"]]
            if entry["error"]:
                lines.append(f"  - error: {md_text(entry['error'])}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def transcript_html(conversation: Conversation, entries: list[dict[str, Any]], *, printable: bool) -> str:
    """The standalone page: inline CSS, no scripts or links, so it opens anywhere, offline."""
    return render_to_string(
        "dashboard/transcript_export.html",
        {
            "title": conversation_title(conversation),
            "conversation": conversation,
            "entries": entries,
            "printable": printable,
        },
    )
