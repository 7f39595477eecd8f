"""Storing the voice notes a worker made, for the gateway to send."""

from __future__ import annotations

from django.core.files.base import ContentFile

from cindy_site.clock import now
from conversations.models import VoiceNote
from conversations.voice_encoding import VoiceNoteAudio


def voice_note_create(
    *,
    agent_id: int,
    conversation_id: int,
    planned_by_node_id: int | None,
    text: str,
    audio: VoiceNoteAudio,
    provider: str,
    model: str,
    voice: str,
    llm_call_id: int | None,
) -> VoiceNote:
    """Write the OGG file under MEDIA_ROOT/voice_notes/ and its row; the file is complete before the
    row names it, so a node that carries the row's id always finds its audio."""
    note = VoiceNote(
        agent_id=agent_id,
        conversation_id=conversation_id,
        planned_by_node_id=planned_by_node_id,
        text=text,
        duration=audio.duration,
        waveform=audio.waveform,
        provider=provider,
        model=model,
        voice=voice,
        llm_call_id=llm_call_id,
        created=now(),
    )
    note.file.save(f"{agent_id}-{conversation_id}.ogg", ContentFile(audio.data), save=False)
    note.save()
    return note
