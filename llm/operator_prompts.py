"""The operator's own instructions for describing media and planning the schedule.

An original config directory may hold `Instructions-Describe-Image.md`, `Instructions-Describe-Video.md`,
`Instructions-Describe-Audio.md` and `Instructions-Schedule.md` (and Cindy's own
`Instructions-Consolidate.md`, for the consolidation turn of a quiet chat); `importagents` stores them as global
role prompts of those names, and operators edit them in the admin like any other prompt. When one is
present (and not blank) it replaces Cindy's built-in text; otherwise the built-in text is used.
Only the global prompt counts: a media description is shared by every agent that meets the file.
"""

from __future__ import annotations

from agents.models import RolePrompt

DESCRIBE_IMAGE = "Instructions-Describe-Image"
DESCRIBE_VIDEO = "Instructions-Describe-Video"
DESCRIBE_AUDIO = "Instructions-Describe-Audio"
SCHEDULE = "Instructions-Schedule"
CONSOLIDATE = "Instructions-Consolidate"

#: The describe prompt for each media kind; kinds not listed use the built-in instruction.
DESCRIBE_PROMPT_FOR_KIND = {
    "photo": DESCRIBE_IMAGE,
    "sticker": DESCRIBE_IMAGE,
    "video": DESCRIBE_VIDEO,
    "video_note": DESCRIBE_VIDEO,
    "gif": DESCRIBE_VIDEO,
    "animation": DESCRIBE_VIDEO,
    "voice": DESCRIBE_AUDIO,
    "audio": DESCRIBE_AUDIO,
}


def operator_prompt(name: str) -> str:
    """The global role prompt called `name`, stripped; "" when there is none."""
    text = RolePrompt.objects.filter(agent__isnull=True, name=name).values_list("text", flat=True).first()
    return (text or "").strip()


def describe_instruction(media_kind: str, default: str) -> str:
    """The system instruction of a describe call for `media_kind`: the operator's, else `default`."""
    name = DESCRIBE_PROMPT_FOR_KIND.get(media_kind)
    return (operator_prompt(name) if name else "") or default
