"""voice: show "recording a voice message" for about the note's length, then send the note.

The note was spoken and encoded by the worker that planned the turn (`engine.voice_render`); the
node carries its `voice_note_id`. Like `send`, the node's random_id is stored before the first
attempt, so a gateway killed mid-send sends the same file again with the same random_id and Telegram
(or the sandbox) answers the first message: the note is neither lost nor sent twice.
"""

from __future__ import annotations

import datetime as dt

from asgiref.sync import sync_to_async

from cindy_site.clock import now
from conversations.models import VoiceNote
from conversations.services.ingest import message_record_sent
from conversations.transport.base import (
    AuthError,
    FloodWait,
    PermanentError,
    TransportError,
    VoiceRef,
    topic_kwargs,
)
from engine.handlers.base import Defer, Done, HandlerContext, register
from engine.handlers.send import TYPING_RENEW_SECONDS, logger, stored_random_id

#: The recording indicator is shown for the note's length, but never longer than this.
MAX_RECORDING_SECONDS = 60


def voice_ref(*, voice_note_id: int) -> VoiceRef | None:
    note = VoiceNote.objects.filter(pk=voice_note_id).first()
    if note is None:
        return None
    return VoiceRef(
        file=note.file.name, duration=note.duration, waveform=bytes(note.waveform), transcript=note.text
    )


async def show_recording(ctx: HandlerContext) -> None:
    """Cosmetic like typing: only errors that must change the schedule (flood, auth) propagate."""
    try:
        await ctx.transport.set_recording(ctx.conversation.peer_id, **topic_kwargs(ctx.conversation.topic_id))
    except (FloodWait, AuthError):
        raise
    except TransportError as exc:
        logger.info("recording indicator failed for agent %s: %s", ctx.agent.name, exc)


async def record_then(ctx: HandlerContext, seconds: float) -> Defer | None:
    """Defer while the agent is still "recording" (renewed every few seconds); None once done."""
    when = now()
    raw = ctx.params.get("recording_until")
    if raw is None:
        until = when + dt.timedelta(seconds=min(seconds, MAX_RECORDING_SECONDS))
        await show_recording(ctx)
        next_run = min(until, when + dt.timedelta(seconds=TYPING_RENEW_SECONDS))
        return Defer(
            next_run, f"recording until {until:%H:%M:%S}", params={"recording_until": until.isoformat()}
        )
    until = dt.datetime.fromisoformat(raw)
    if when < until:
        await show_recording(ctx)
        return Defer(min(until, when + dt.timedelta(seconds=TYPING_RENEW_SECONDS)), "still recording")
    return None


@register("voice")
async def handle_voice(ctx: HandlerContext) -> Done | Defer:
    note_id = ctx.params.get("voice_note_id")
    voice = await sync_to_async(voice_ref)(voice_note_id=int(note_id or 0))
    if voice is None:
        raise PermanentError("VOICE_NOTE_MISSING", f"voice note {note_id!r} of this task does not exist")
    random_id = await stored_random_id(ctx)
    deferred = await record_then(ctx, voice.duration)
    if deferred is not None:
        return deferred
    reply_to = ctx.params.get("reply_to")
    sent = await ctx.transport.send_voice(
        ctx.conversation.peer_id,
        voice,
        random_id=random_id,
        reply_to=reply_to,
        **topic_kwargs(ctx.conversation.topic_id),
    )
    # No unique_id: the mirror knows what the note says, so it is never downloaded nor described.
    part = {
        "kind": "media",
        "media_kind": "voice",
        "mime": voice.mime,
        "duration": voice.duration,
        "extra": {"transcript": voice.transcript},
    }
    await sync_to_async(message_record_sent)(
        agent=ctx.agent, conversation=ctx.conversation, sent=sent, reply_to=reply_to, media=[part]
    )
    return Done(
        f"sent voice note {note_id} ({voice.duration:.1f} s) as #{sent.message_id}",
        {"message_id": sent.message_id, "voice_note_id": note_id},
    )
