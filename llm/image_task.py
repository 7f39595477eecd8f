"""The `image` task: a picture the agent makes from a description and sends as a photo.

    {"kind": "image", "description": "...", "text": "optional caption",
     "references": ["<library unique id>", ...], "reply_to": 123}

`description` (alias `prompt`) is what the image model is asked to draw and, once made, the picture's
curated description in the agent's media library; `text` is the photo's caption; `references` name up
to MAX_IMAGE_REFERENCES pictures of the agent's library the model is shown, so its world looks the same
from one picture to the next.
"""

from __future__ import annotations

from typing import Any

from llm.task_fields import TaskError, clean_text, message_id_of, optional_text, required_text, short_repr

#: Library pictures one image task may show the model.
MAX_IMAGE_REFERENCES = 3
#: A description longer than this is cut (it becomes the picture's description in the prompt).
MAX_IMAGE_DESCRIPTION = 2000
#: Telegram's limit for a photo's caption.
CAPTION_LIMIT = 1024


def image_params(raw: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """The params of a valid image task; TaskError says what is wrong and how to fix it."""
    try:
        description = required_text(raw, "description", "prompt", notes=notes).strip()
    except TaskError as exc:
        raise TaskError(f"{exc}: describe the picture to make") from exc
    if len(description) > MAX_IMAGE_DESCRIPTION:
        notes.append(
            f"an image description of {len(description)} characters was cut to {MAX_IMAGE_DESCRIPTION}"
        )
        description = description[:MAX_IMAGE_DESCRIPTION]
    caption = optional_text(raw, "text", notes).strip()
    if len(caption) > CAPTION_LIMIT:
        notes.append(
            f"an image caption of {len(caption)} characters was cut to {CAPTION_LIMIT} (Telegram's limit)"
        )
        caption = caption[:CAPTION_LIMIT]
    return {
        "description": description,
        "caption": caption,
        "references": _references(raw.get("references"), notes),
        "reply_to": message_id_of(raw, "reply_to", required=False),
    }


def _references(value: Any, notes: list[str]) -> list[str]:
    if value in (None, "", []):
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(
            f'"references" is {short_repr(value)}: give a list of unique ids from your Media Library'
        )
    ids = list(dict.fromkeys(clean_text(v, notes, '"references"').strip() for v in value if v.strip()))
    if len(ids) > MAX_IMAGE_REFERENCES:
        notes.append(
            f"an image task named {len(ids)} references; only the first {MAX_IMAGE_REFERENCES} are shown"
        )
    return ids[:MAX_IMAGE_REFERENCES]
