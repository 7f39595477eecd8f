"""Media descriptions: warm the catalog for a conversation's recent media, within a budget.

Prompt building only reads `MediaDescription` rows; this is the one place that creates AI ones.

- Newest media first, so fresh items win the budget; cache hits are free.
- Curated descriptions are never overwritten.
- Media bytes come from the file the gateway stored (`file`, relative to MEDIA_ROOT); media that was
  not downloaded is skipped and costs nothing.
- Animated (TGS) stickers are shown as `MEDIA_TGS_FRAMES` frames (PNG images, `llm/media_tgs.py`).
- Videos past `MEDIA_VIDEO_MAX_DURATION_SECONDS` are never sent (`llm/media_caps.py`): no call, no cost.
- Results: status ok / not_understood (blocked or empty reply) / unsupported (a format the model
  cannot take) / timeout / error (retried on a later turn, up to MAX_ATTEMPTS).
"""

from __future__ import annotations

import logging
import mimetypes
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import F

from cindy_site.clock import get_clock, now
from cindy_site.parameters import parameter
from conversations.models import Message
from llm.calls import MIN_ATTEMPT_SECONDS, call_llm
from llm.conversation import ChatMessage
from llm.errors import LLMConfigError, LLMDeadlineError, LLMError, LLMTransientError
from llm.media_caps import video_too_long
from llm.media_tgs import FRAME_MIME, TgsRenderError, TgsRenderTimedOut, is_tgs, read_tgs, tgs_frames
from llm.models import LLMCall
from llm.operator_prompts import describe_instruction
from llm.providers import provider_for
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route, UnknownModelError, resolve
from media_catalog.audio import is_transcribable, too_long
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem, StoredMedia, media_items
from recall.services import media_described

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
MAX_MEDIA_BYTES = 20_000_000
_FINAL = {
    MediaDescription.Status.CURATED,
    MediaDescription.Status.OK,
    MediaDescription.Status.NOT_UNDERSTOOD,
    MediaDescription.Status.UNSUPPORTED,
}
DESCRIBE_SYSTEM = (
    "You describe media from a chat for someone who cannot see or hear it. Answer with one or two plain "
    "sentences: what it shows or says, and the mood. No preamble."
)
_ASK = {
    "sticker": "Describe this sticker.",
    "photo": "Describe this photo.",
    "voice": "Transcribe or summarise this voice message.",
    "audio": "Describe this audio clip.",
}
ASK_TGS = (
    "Describe this animated sticker. The {count} images are frames of its animation, in order from "
    "start to end: say what it shows and what happens."
)


def media_route() -> Route:
    return resolve(parameter("MEDIA_MODEL"))


def _mime(item: MediaItem, path: Path) -> str:
    return (item.mime or mimetypes.guess_type(path.name)[0] or "").lower()


def pending_media(messages: Iterable[Message | ChatMessage]) -> list[StoredMedia]:
    """Media parts that may need a description, newest message first, one per unique id."""
    seen: set[str] = set()
    found: list[StoredMedia] = []
    for message in sorted(messages, key=lambda m: (m.date, m.message_id), reverse=True):
        for item in media_items(message.media):
            if item.unique_id and item.unique_id not in seen:
                seen.add(item.unique_id)
                found.append(item)
    return found


def warm_media_descriptions(
    messages: Sequence[Message | ChatMessage],
    *,
    budget: int | None = None,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> int:
    """Describe undescribed media in `messages`; return how many attempts the budget paid for.

    With a `deadline` (monotonic, the injected clock) nothing new starts when it is near; what is left
    is described on a later turn.
    """
    budget = parameter("MEDIA_DESC_BUDGET_PER_TICK") if budget is None else budget
    parts = pending_media(messages)
    if budget <= 0 or not parts:
        return 0
    known = {
        d.unique_id: d for d in MediaDescription.objects.filter(unique_id__in=[p.unique_id for p in parts])
    }
    spent = 0
    hearing = True  # False once the transcription route is not configured: pictures go on
    # The agent's own voice notes are not transcribed: it knows what it said. A partner's are.
    own = _heard_ids(messages, agent=True) - _heard_ids(messages, agent=False)
    for part in parts:
        if spent >= budget:
            break
        if deadline is not None and deadline - get_clock().monotonic() < MIN_ATTEMPT_SECONDS:
            break
        row = known.get(part.unique_id)
        if row is not None and (row.status in _FINAL or row.is_curated or row.attempts >= MAX_ATTEMPTS):
            continue
        heard = is_transcribable(part)
        if heard and (too_long(part) or not hearing or part.unique_id in own):
            continue  # past the 5-minute cap: no call; the history says so (llm.transcription)
        if video_too_long(part):
            continue  # the history says so instead; nothing is downloaded or paid
        relative = part.stored_file
        if not relative:
            continue
        path = Path(settings.MEDIA_ROOT) / relative
        if not path.is_file():
            continue
        spent += 1
        try:
            if heard:  # voice notes, audio, video notes: a transcript (llm.transcription)
                hearing = _transcribe(
                    part,
                    path,
                    agent_id=agent_id,
                    conversation_id=conversation_id,
                    node_id=node_id,
                    sleep=sleep,
                    deadline=deadline,
                )
                continue
            status, text = describe_file(
                part,
                path,
                agent_id=agent_id,
                conversation_id=conversation_id,
                node_id=node_id,
                sleep=sleep,
                deadline=deadline,
            )
        except (LLMConfigError, UnknownModelError) as exc:
            logger.warning("media descriptions are off: %s", exc)
            break
        except LLMDeadlineError:
            break  # out of time, not a failure of this media: nothing is stored
        _store(part, status=status, description=text, mime=_mime(part, path))
    return spent


def _heard_ids(messages: Sequence[Message | ChatMessage], *, agent: bool) -> set[str]:
    return {
        p.unique_id
        for m in messages
        if m.is_agent == agent
        for p in media_items(m.media)
        if p.unique_id and is_transcribable(p)
    }


def _transcribe(part: MediaItem, path: Path, **context: Any) -> bool:
    """Transcribe one heard part; False when transcription is not configured (logged once a pass)."""
    from llm.transcription import transcribe_and_store

    try:
        transcribe_and_store(part, path, **context)
    except (LLMConfigError, UnknownModelError) as exc:
        logger.warning("voice transcription is off: %s (see TRANSCRIPTION_MODEL)", exc)
        return False
    return True


def describe_file(
    part: MediaItem,
    path: Path,
    *,
    agent_id: int | None = None,
    conversation_id: int | None = None,
    node_id: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> tuple[str, str | None]:
    """Ask MEDIA_MODEL for a description of one file: (status, description or None)."""
    route = media_route()
    mime = _mime(part, path)
    with path.open("rb") as handle:
        head = handle.read(4)
    if is_tgs(part, head):
        return _describe_tgs(
            part,
            path,
            route=route,
            agent_id=agent_id,
            conversation_id=conversation_id,
            node_id=node_id,
            sleep=sleep,
            deadline=deadline,
        )
    if not mime or not provider_for(route.provider).supports_media(mime):
        return MediaDescription.Status.UNSUPPORTED, None
    if path.stat().st_size > MAX_MEDIA_BYTES:
        return MediaDescription.Status.UNSUPPORTED, None
    kind = part.media_kind or "other"
    ask = _ASK.get(kind, f"Describe this {kind}.")
    request = LLMRequest(
        system=describe_instruction(kind, DESCRIBE_SYSTEM),
        turns=[Turn(role="user", parts=(Part(text=ask), Part(data=path.read_bytes(), mime=mime)))],
    )
    return _ask(
        request,
        route=route,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        sleep=sleep,
        deadline=deadline,
    )


def _describe_tgs(part: MediaItem, path: Path, *, route: Route, **call: Any) -> tuple[str, str | None]:
    """An animated sticker: its frames as images (the model cannot take Lottie); a file that does not
    render is `not_understood` (it never will), a model without image input `unsupported`."""
    if not provider_for(route.provider).supports_media(FRAME_MIME):
        return MediaDescription.Status.UNSUPPORTED, None
    deadline = call.get("deadline")
    # Rendering gets no more than the turn has left, keeping the describe call's minimum for after it.
    seconds = None if deadline is None else int(deadline - get_clock().monotonic() - MIN_ATTEMPT_SECONDS)
    try:
        frames = tgs_frames(read_tgs(path), count=settings.MEDIA_TGS_FRAMES, seconds=seconds)
    except TgsRenderTimedOut as exc:
        if seconds is not None and seconds < settings.CINDY_TGS_RENDER_SECONDS:
            # Cut short by the turn, not by the sticker: nothing is stored, a later turn tries again.
            raise LLMDeadlineError(
                f"animated sticker {part.unique_id}: {exc} (the turn's time ran out)"
            ) from None
        return _not_rendered(part, exc)
    except TgsRenderError as exc:
        return _not_rendered(part, exc)
    parts = (
        Part(text=ASK_TGS.format(count=len(frames))),
        *(Part(data=frame, mime=FRAME_MIME) for frame in frames),
    )
    request = LLMRequest(
        system=describe_instruction("sticker", DESCRIBE_SYSTEM), turns=[Turn(role="user", parts=parts)]
    )
    return _ask(request, route=route, **call)


def _not_rendered(part: MediaItem, exc: Exception) -> tuple[str, None]:
    """A sticker refused or failed by the renderer: `not_understood`, shown by its emoji and set."""
    logger.warning(
        "animated sticker %s (%s %s) is not rendered: %s; it is shown by its emoji and set",
        part.unique_id,
        part.sticker_set_name or "no set",
        part.sticker_name or "no emoji",
        exc,
    )
    return MediaDescription.Status.NOT_UNDERSTOOD, None


def _ask(
    request: LLMRequest,
    *,
    route: Route,
    agent_id: int | None,
    conversation_id: int | None,
    node_id: int | None,
    sleep: Callable[[float], None],
    deadline: float | None,
) -> tuple[str, str | None]:
    """One describe call: (status, description or None)."""
    try:
        reply = call_llm(
            request,
            route=route,
            purpose=LLMCall.Purpose.DESCRIBE,
            agent_id=agent_id,
            conversation_id=conversation_id,
            node_id=node_id,
            sleep=sleep,
            deadline=deadline,
        )
    except LLMDeadlineError:
        raise
    except LLMTransientError as exc:
        timed_out = "timeout" in str(exc).lower() or "timed out" in str(exc).lower()
        return (MediaDescription.Status.TIMEOUT if timed_out else MediaDescription.Status.ERROR), None
    except LLMConfigError:
        raise
    except LLMError:
        return MediaDescription.Status.ERROR, None
    if reply.status != "ok" or not reply.text.strip():
        return MediaDescription.Status.NOT_UNDERSTOOD, None
    return MediaDescription.Status.OK, " ".join(reply.text.split())


def _store(part: MediaItem, *, status: str, description: str | None, mime: str) -> None:
    row, created = MediaDescription.objects.get_or_create(
        unique_id=part.unique_id,
        defaults={
            "kind": part.media_kind or "other",
            "sticker_set_name": part.sticker_set_name,
            "sticker_set_title": part.sticker_set_title,
            "sticker_name": part.sticker_name,
            "source": MediaDescription.Source.AI,
            "status": status,
            "description": description,
            "mime": mime[:100],
            "attempts": 1,
        },
    )
    if created or row.is_curated:
        return
    # Only while the row is still an AI one: an operator may curate it while the call runs, and
    # curated text always wins (a plain save would write the AI text over it).
    MediaDescription.objects.filter(pk=row.pk).exclude(source=MediaDescription.Source.CURATED).update(
        status=status, description=description, mime=mime[:100], attempts=F("attempts") + 1, updated=now()
    )
    media_described(unique_ids=[part.unique_id])  # `update()` sends no post_save for recall to see
