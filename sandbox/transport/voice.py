"""Voice notes in the sandbox: the note's file is shown in the chat with an audio player.

The file is copied beside the sandbox's uploads (MEDIA_ROOT/sandbox/voice-<random_id>.ogg), so the
browser chat serves it like an uploaded photo; the message's media part carries the duration and
the transcript (what the note says), which `sandbox show` prints as `(voice 3.2 s) transcript`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings

from conversations.transport.base import PermanentError, SentMessage, VoiceRef
from sandbox.services.library import SANDBOX_PHOTO_DIR


def sandbox_voice_part(voice: VoiceRef, *, random_id: int) -> dict:
    source = Path(settings.MEDIA_ROOT) / voice.file
    if not source.is_file():
        raise PermanentError("MEDIA_NOT_FOUND", f"the voice note's file {voice.file!r} is missing")
    relative = f"{SANDBOX_PHOTO_DIR}/voice-{random_id & 0xFFFFFFFFFFFFFFFF:x}.ogg"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return {
        "kind": "media",
        "media_kind": "voice",
        "mime": voice.mime,
        "file": relative,
        "duration": voice.duration,
        "transcript": voice.transcript,
        # As Cindy's mirror keeps it (MediaItem.extra), so ingesting this message keeps the transcript.
        "extra": {"transcript": voice.transcript},
    }


class SandboxVoice:
    """Mixed into `SandboxTransport`; relies on its `_send` and `_set_typing`."""

    async def send_voice(
        self,
        peer_id: int,
        voice: VoiceRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        part = await sync_to_async(sandbox_voice_part)(voice, random_id=random_id)
        return await sync_to_async(self._send)(peer_id, "", [part], random_id, reply_to, topic_id)

    async def set_recording(self, peer_id: int, *, topic_id: int | None = None) -> None:
        """The sandbox chat has one activity indicator: recording shows as typing."""
        await sync_to_async(self._set_typing)(peer_id, True)
