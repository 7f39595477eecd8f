"""The operator's own Instructions-Describe-Image/Video/Audio and Instructions-Schedule (global role
prompts, imported from an original config directory or written in the admin) replace Cindy's
built-in text when present."""

from __future__ import annotations

import pytest

from agents.models import RolePrompt
from llm.media import DESCRIBE_SYSTEM, describe_file
from llm.prompt.instructions import TurnContext, specific_instructions
from media_catalog.parts import MediaItem

pytestmark = pytest.mark.django_db
SCHEDULE = {"through": "2026-01-07T00:00:00+00:00", "filled_until": "2026-01-06T09:00:00+00:00"}


@pytest.fixture
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    (tmp_path / "chat").mkdir()
    return tmp_path


def _describe(dm, media_root, kind: str, mime: str) -> None:
    path = media_root / "chat" / f"{kind}-1.bin"
    path.write_bytes(b"\xff\xd8\xff fake bytes")
    part = MediaItem(media_kind=kind, unique_id=f"{kind}-1", mime=mime)
    assert describe_file(part, path, agent_id=dm.agent_id, conversation_id=dm.pk)[0] == "ok"


def _system(request) -> str:
    return " ".join(part["text"] for part in request.json["systemInstruction"]["parts"])


@pytest.mark.parametrize(
    ("kind", "mime", "prompt"),
    [
        ("photo", "image/jpeg", "Instructions-Describe-Image"),
        ("sticker", "image/webp", "Instructions-Describe-Image"),
        ("voice", "audio/ogg", "Instructions-Describe-Audio"),
        ("video", "video/mp4", "Instructions-Describe-Video"),
    ],
)
def test_the_operators_describe_prompt_is_the_describe_call_instruction(
    dm, fake_llm, media_root, kind, mime, prompt
):
    RolePrompt.objects.create(name=prompt, text="Describe it in the words of a ship's log.")
    fake_llm.reply_with("Logged.")

    _describe(dm, media_root, kind, mime)

    system = _system(fake_llm.requests[0])
    assert "Describe it in the words of a ship's log." in system and DESCRIBE_SYSTEM not in system


def test_without_the_operators_prompt_the_built_in_instruction_is_used(dm, fake_llm, media_root):
    RolePrompt.objects.create(name="Instructions-Describe-Audio", text="Only for sounds.")
    fake_llm.reply_with("A photo.")

    _describe(dm, media_root, "photo", "image/jpeg")

    assert _system(fake_llm.requests[0]) == DESCRIBE_SYSTEM


def test_the_operators_schedule_prompt_leads_the_planning_turn():
    RolePrompt.objects.create(name="Instructions-Schedule", text="Plan your week like a lighthouse keeper.")

    text = specific_instructions(TurnContext(trigger="schedule", schedule=SCHEDULE))

    assert text.startswith("# Schedule Planning\n\nPlan your week like a lighthouse keeper.")
    assert "2026-01-07T00:00:00+00:00" in text  # how far to fill stays Cindy's: it is computed
    assert "Vary your days the way a real person would" not in text


def test_without_the_operators_schedule_prompt_cindys_own_is_used():
    text = specific_instructions(TurnContext(trigger="schedule", schedule=SCHEDULE))

    assert "Vary your days the way a real person would" in text
