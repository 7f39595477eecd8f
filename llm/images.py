"""Pictures the agent makes: the `image` task's generation, on the worker that plans the turn.

An allowed `image` task (the policy, `llm.kinds.image`, has checked the daily limit and where the
turn's text came from) is made here, before the turn's nodes are stored:

1. The pictures its `references` name are read from the agent's media library (an uploaded or made
   picture's file; a Telegram item's downloaded copy) and shown to the model after the description.
2. CINDY_IMAGE_MODEL (a Gemini image model) is asked for an IMAGE reply through `call_llm`: an LLM
   call row with purpose `image`, its image output tokens and cost at the price table's image rate.
3. The picture (it must open as an image) joins the agent's library with the description as its
   curated description (`library_item_upload`: the id is the content hash), so `send_media` can send
   it again and the history shows it described, never described again by the AI.
4. The task keeps the item's `unique_id`; the gateway's `image` node sends it as a photo with the
   caption, exactly once (engine/handlers/image.py).

A picture that cannot be made (the model refused or sent no picture, the provider failed) drops its
task with an error line for the turn's log; the turn's other tasks run.
"""

from __future__ import annotations

import datetime as dt
import io
import time
from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from cindy_site.clock import now
from cindy_site.parameters import parameter
from conversations.models import Conversation
from llm.calls import call_llm
from llm.errors import LLMConfigError, LLMError
from llm.models import LLMCall
from llm.request import LLMRequest, Part, Turn
from llm.routing import Route, UnknownModelError, resolve
from llm.tasks import Task

IMAGE_SYSTEM = (
    "You make one picture from the description you are given. Where reference pictures are given, "
    "keep their places, people, objects and style, so the new picture belongs to the same world."
)
#: A reference file larger than this is not sent to the model.
MAX_REFERENCE_BYTES = 7 * 1024 * 1024
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif"}


class PictureError(Exception):
    """The picture could not be made; the message says why, for the turn's log."""


def image_route() -> Route:
    """CINDY_IMAGE_MODEL's route; only Gemini makes pictures."""
    try:
        route = resolve(parameter("CINDY_IMAGE_MODEL"))
    except UnknownModelError as exc:
        raise LLMConfigError(f"CINDY_IMAGE_MODEL: {exc}") from exc
    if route.provider != "gemini":
        raise LLMConfigError(
            f'CINDY_IMAGE_MODEL is "{parameter("CINDY_IMAGE_MODEL")}": pictures are made by Gemini image '
            "models only; use e.g. gemini-2.5-flash-image"
        )
    return route


def day_start(at: dt.datetime) -> dt.datetime:
    """Midnight of `at`'s day in TIME_ZONE: the day the daily picture limit counts (as the spend caps)."""
    tz = ZoneInfo(settings.TIME_ZONE)
    return dt.datetime.combine(at.astimezone(tz).date(), dt.time(), tzinfo=tz)


def pictures_made_today(*, agent_id: int) -> int:
    """Image calls the agent made since midnight, whatever their outcome (llmcall_day_idx)."""
    return LLMCall.objects.filter(
        created__gte=day_start(now()), agent_id=agent_id, purpose=LLMCall.Purpose.IMAGE
    ).count()


def make_pictures(
    tasks: list[Task],
    *,
    conversation: Conversation,
    node_id: int | None,
    errors: list[str],
    notes: list[str],
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> list[Task]:
    """The tasks with each `image` task's picture made and its `unique_id` set; a picture that could
    not be made drops its task with an error line."""
    kept: list[Task] = []
    for task in tasks:
        if task.kind != "image":
            kept.append(task)
            continue
        try:
            task.params["unique_id"] = picture_make(
                description=task.params["description"],
                references=task.params.get("references") or [],
                conversation=conversation,
                node_id=node_id,
                notes=notes,
                sleep=sleep,
                deadline=deadline,
            )
        except (PictureError, LLMError) as exc:
            errors.append(f"image: no picture was made: {exc}; dropped")
            continue
        kept.append(task)
    return kept


def picture_make(
    *,
    description: str,
    references: list[str],
    conversation: Conversation,
    node_id: int | None,
    notes: list[str],
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> str:
    """Make one picture and add it to the agent's library; returns its unique id (see the module)."""
    from media_catalog.services.library import library_item_upload

    agent = conversation.agent
    limit = parameter("CINDY_IMAGES_PER_DAY")
    if pictures_made_today(agent_id=agent.pk) >= limit:  # another turn made one since the policy looked
        raise PictureError(f"agent {agent.name} reached CINDY_IMAGES_PER_DAY ({limit}) for today")
    parts = [Part(text=description)]
    for unique_id in references:
        found = reference_bytes(agent_id=agent.pk, unique_id=unique_id)
        if found is None:
            notes.append(f"image reference {unique_id}: no copy of it on this server; drawn without it")
            continue
        parts.append(Part(data=found[0], mime=found[1]))
    request = LLMRequest(
        system=IMAGE_SYSTEM,
        turns=[Turn(role="user", parts=tuple(parts))],
        response_modalities=("IMAGE",),
    )
    route = image_route()
    reply = call_llm(
        request,
        route=route,
        purpose=LLMCall.Purpose.IMAGE,
        agent_id=agent.pk,
        conversation_id=conversation.pk,
        node_id=node_id,
        sleep=sleep,
        deadline=deadline,
    )
    if not reply.images:
        reason = reply.finish_reason or reply.status
        raise PictureError(f"{route.provider}/{route.model} sent no picture ({reason})")
    data, mime = reply.images[0]
    mime = _checked_image(data, mime, where=f"{route.provider}/{route.model}")
    upload = SimpleUploadedFile(f"picture{_EXTENSIONS.get(mime, '.png')}", data, content_type=mime)
    return library_item_upload(agent_id=agent.pk, upload=upload, description=description).unique_id


def reference_bytes(*, agent_id: int, unique_id: str) -> tuple[bytes, str] | None:
    """(bytes, MIME type) of a picture of the agent's library: its file, else the catalog's copy."""
    from media_catalog.models import LibraryItem, MediaDescription

    item = LibraryItem.objects.filter(agent_id=agent_id, unique_id=unique_id).first()
    if item is None:
        return None
    for stored, mime in ((item.file, item.mime), *_catalog_copies(MediaDescription, unique_id)):
        if not stored:
            continue
        path = Path(settings.MEDIA_ROOT) / stored.name
        if path.is_file() and path.stat().st_size <= MAX_REFERENCE_BYTES:
            data = path.read_bytes()
            try:
                return data, _checked_image(data, mime, where=f"library item {unique_id}")
            except PictureError:
                return None
    return None


def _catalog_copies(model, unique_id: str) -> list[tuple]:
    return [(row.file, row.mime) for row in model.objects.filter(unique_id=unique_id).exclude(file="")]


def _checked_image(data: bytes, mime: str, *, where: str) -> str:
    """The MIME type of picture bytes that open as an image; PictureError when they do not."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            image.verify()
            found = Image.MIME.get(image.format or "", "")
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise PictureError(f"{where}: the picture does not open as an image ({exc})") from exc
    return found or mime or "image/png"
