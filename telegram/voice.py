"""Voice notes on Telegram: the OGG/Opus file uploaded and sent as a voice message.

`messages.sendMedia` with an uploaded document carrying `DocumentAttributeAudio(voice=True)` (its
duration and Telegram's 5-bit waveform) and the send's stored random_id: a send retried after a
crash uploads the file again, and Telegram answers the repeated random_id with the first message.
"""

from __future__ import annotations

import math
from pathlib import Path

from django.conf import settings
from telethon import functions, types

from conversations.transport.base import PermanentError, SentMessage, VoiceRef


def is_voice_message(message) -> bool:
    media = getattr(message, "media", None)
    document = getattr(media, "document", None)
    return isinstance(document, types.Document) and any(
        isinstance(a, types.DocumentAttributeAudio) and a.voice for a in document.attributes
    )


class TelethonVoice:
    """Mixed into `TelethonTransport`; relies on its `_peer_call`, `_guard` and `_send_input_media`."""

    async def send_voice(
        self,
        peer_id: int,
        voice: VoiceRef,
        *,
        random_id: int,
        reply_to: int | None = None,
        topic_id: int | None = None,
    ) -> SentMessage:
        path = Path(settings.MEDIA_ROOT) / voice.file
        if not path.is_file():
            raise PermanentError("MEDIA_NOT_FOUND", f"the voice note's file {voice.file!r} is missing")
        self._check_pause(peer_id)
        client = self._require_client()
        uploaded = await self._guard(client.upload_file(str(path)), peer_id=peer_id)
        media = types.InputMediaUploadedDocument(
            file=uploaded,
            mime_type=voice.mime,
            attributes=[
                types.DocumentAttributeAudio(
                    duration=max(1, math.ceil(voice.duration)), voice=True, waveform=voice.waveform or None
                )
            ],
        )
        return await self._send_input_media(
            peer_id,
            media,
            random_id=random_id,
            reply_to=reply_to,
            matches=is_voice_message,
            topic_id=topic_id,
        )

    async def set_recording(self, peer_id: int, *, topic_id: int | None = None) -> None:
        action = types.SendMessageRecordAudioAction()
        await self._peer_call(
            peer_id,
            lambda peer: functions.messages.SetTypingRequest(
                peer=peer, action=action, top_msg_id=topic_id or None
            ),
        )
