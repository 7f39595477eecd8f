"""Voice notes in the sandbox: a person sends an OGG/Opus file as a voice note (`manage.py sandbox
voice`), and transcripts show in the sandbox's own transcript (`sandbox show`).

The file is kept as MEDIA_ROOT/sandbox/<unique id>.ogg; the unique id is the content hash, so the same
note sent twice is one catalog entry (and one transcription), as with Telegram's file unique ids. Its
duration is read with PyAV, as Telegram's clients state it in the voice note's audio attribute.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from django.conf import settings

from agents.models import Agent
from media_catalog.audio import is_ogg, media_duration
from sandbox.models import SandboxMessage
from sandbox.services.chats import SandboxError, sandbox_say
from sandbox.services.files import LIMIT_SETTING, check_file_size, max_file_bytes

#: The sandbox's uploads, relative to MEDIA_ROOT (photos live there too).
VOICE_DIR = "sandbox"
_HOW = "record one, or convert a file: ffmpeg -i note.wav -c:a libopus note.ogg"


def sandbox_voice_part(data: bytes, *, name: str) -> dict[str, Any]:
    """Store a voice note's bytes and return its media part (kind voice, audio/ogg, its duration)."""
    if not is_ogg(data[:4]):
        raise SandboxError(f"{name} is not an OGG file: a voice note is Opus audio in Ogg ({_HOW})")
    if len(data) > max_file_bytes():
        raise SandboxError(
            f"{name} is {len(data):,} bytes; a voice note may have at most {max_file_bytes():,} "
            f"({LIMIT_SETTING})"
        )
    unique_id = f"sbv{hashlib.sha256(data).hexdigest()[:29]}"
    relative = f"{VOICE_DIR}/{unique_id}.ogg"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.write_bytes(data)
    duration = media_duration(target)
    if duration is None:
        target.unlink(missing_ok=True)
        raise SandboxError(f"{name}: no audio could be read from it; send an OGG/Opus voice note ({_HOW})")
    return {
        "kind": "media",
        "media_kind": "voice",
        "unique_id": unique_id,
        "mime": "audio/ogg",
        "duration": round(duration, 2),
        "file": relative,
        "path": str(target),
        "size": len(data),
    }


def sandbox_voice(
    *,
    agent: Agent,
    path: Path | str,
    as_name: str = "You",
    group: str | None = None,
    reply_to: int | None = None,
) -> SandboxMessage:
    """A person sends the file at `path` to the agent as a voice note; its size is checked (by
    `stat`) before it is read."""
    path = Path(path)
    check_file_size(path, what="voice note")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SandboxError(
            f"cannot read the voice note {path}: {exc.strerror or exc}; give an OGG file"
        ) from exc
    part = sandbox_voice_part(data, name=str(path))
    return sandbox_say(agent=agent, as_name=as_name, group=group, reply_to=reply_to, media=[part])
