"""The sandbox chat: say something to a sandbox agent as a person, and show the chat.

Saying goes through the sandbox page's own form (`sandbox.forms.SendForm`) and `sandbox_say`, so
the same checks apply; the gateway ingests the message and the agent answers in its own time.
A chat is named by its id (`chat_id`, as every message answered carries it) or, for a group, by its
title; either way only among the chats within the caller's grants (every agent in the chat is one they
may see). A title that names only others' groups starts a new group of that title; an id beyond the
grants is refused naming `chat_id` (docs/dashboard.md, "sandbox groups").

`POST .../sandbox/files` sends a media file (multipart) the way `manage.py sandbox file` does; its
body is refused by its Content-Length before it is read when it could hold a file past
CINDY_SANDBOX_MAX_FILE_BYTES (`cindy_site.body_limit.limit_route_body`).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from django.http import HttpRequest
from ninja import Field, File, Form, Router, Schema, Status
from ninja.files import UploadedFile
from pydantic import StrictInt

from agents.access import visible_agent_ids
from api.core import DEFAULT_LIMIT, ERRORS, ApiError, Limit, Offset, RowId, page, page_schema, visible_agent
from cindy_site.body_limit import limit_route_body
from sandbox.forms import ChatForm, SendForm
from sandbox.permissions import SANDBOX_VIEW, SANDBOX_WRITE
from sandbox.selectors import sandbox_chat_messages, sandbox_chat_of, sandbox_message_row
from sandbox.services.chats import SandboxError, sandbox_find_chat, sandbox_say
from sandbox.services.files import LIMIT_SETTING, file_part, max_file_bytes

router = Router(tags=["sandbox"])


class SayIn(Schema):
    text: str = Field(min_length=1, max_length=4096)
    as_name: str = Field("You", min_length=1, max_length=64, description="Who speaks (a sandbox person)")
    group: str = Field(
        "",
        max_length=255,
        description="A group title, looked up among the groups whose every agent you may see (another "
        "group of that title starts a new one); empty for the direct messages",
    )
    chat_id: StrictInt | None = Field(
        None,
        ge=1,
        le=2**63 - 1,
        description="The sandbox chat to write in, by id (a message's chat_id), in place of group: the "
        "agent must be in it and every agent in it visible to you",
    )
    reply_to: StrictInt | None = Field(
        None, ge=1, le=2**31, description="A message id in that chat (one that is not: 422 naming reply_to)"
    )


class SandboxMessageOut(Schema):
    chat_id: int
    message_id: int
    sender: str
    sender_user_id: int
    from_agent: bool
    date: dt.datetime | None
    text: str
    reply_to_id: int | None
    reactions: list[Any]
    edited: bool
    deleted: bool


SandboxPage = page_schema(SandboxMessageOut, "SandboxPage")


def _error_field(detail: str) -> str | None:
    if detail.startswith("chat_id"):
        return "chat_id"
    return "reply_to" if "reply" in detail else None


def _form_errors(form: SendForm) -> tuple[str, str | None]:
    for name, errors in form.errors.items():
        field = None if name == "__all__" else name
        return f"{name if field else 'message'}: {' '.join(errors)}", field
    return "the message was refused", None


@router.post(
    "/{agent_id}/sandbox/messages",
    response={201: SandboxMessageOut, **ERRORS},
    summary="Say something to a sandbox agent",
    operation_id="sandbox_say",
    openapi_extra={
        "responses": {
            201: {
                "links": {
                    "ShowChat": {
                        "operationId": "sandbox_show",
                        "parameters": {
                            "agent_id": "$request.path.agent_id",
                            "chat_id": "$response.body#/chat_id",
                        },
                        "description": "Show the chat the message was said in",
                    }
                }
            }
        }
    },
)
def sandbox_say_view(request: HttpRequest, agent_id: RowId, body: SayIn):
    agent = visible_agent(request, agent_id, SANDBOX_WRITE)
    if body.chat_id is not None and body.group.strip():
        raise ApiError(
            422, "give chat_id or group, not both: chat_id already names the chat", field="chat_id"
        )
    data = {"agent": agent.pk, "text": body.text, "as_name": body.as_name, "group": body.group}
    if body.reply_to is not None:
        data["reply_to"] = body.reply_to
    form = SendForm(data)
    if not form.is_valid():
        detail, field = _form_errors(form)
        raise ApiError(422, detail, field=field)
    cleaned = form.cleaned_data
    try:
        message = sandbox_say(
            agent=cleaned["agent"],
            text=cleaned["text"],
            as_name=cleaned["as_name"],
            group=cleaned["group"] or None,
            reply_to=cleaned["reply_to"],
            within=visible_agent_ids(request.user),
            chat_id=body.chat_id,
        )
    except SandboxError as exc:
        raise ApiError(422, str(exc), field=_error_field(str(exc))) from None
    return Status(201, sandbox_message_row(message))


@router.get(
    "/{agent_id}/sandbox/messages",
    response={200: SandboxPage, **ERRORS},
    summary="Show a sandbox chat, oldest first",
    operation_id="sandbox_show",
)
def sandbox_show(
    request: HttpRequest,
    agent_id: RowId,
    as_name: Annotated[str, Field(min_length=1, max_length=64)] = "You",
    group: Annotated[str, Field(max_length=255)] = "",
    chat_id: Annotated[int | None, Field(ge=1, le=2**63 - 1)] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
):
    """The chat between `as_name` and the agent (or the group titled `group`, among those whose every
    agent you may see; or the chat `chat_id`, then `as_name` and `group` are not read); empty if none
    yet. A `chat_id` the agent is not in, or with an agent you may not see, answers 404."""
    agent = visible_agent(request, agent_id, SANDBOX_VIEW)
    within = visible_agent_ids(request.user)
    if chat_id is not None:
        chat = sandbox_chat_of(agent=agent, chat_id=chat_id, within=within)
        if chat is None:
            raise ApiError(
                404,
                f"chat_id {chat_id}: {agent.name} is in no sandbox chat of that id that you may see",
                field="chat_id",
            )
    else:
        chat = sandbox_find_chat(agent=agent, as_name=as_name, group=group or None, within=within)
    messages = sandbox_chat_messages(chat=chat)
    return page(request, messages, limit=limit, offset=offset, row=sandbox_message_row)


#: Room in an upload's body for the form's other fields and the multipart framing.
UPLOAD_FORM_ROOM = 64 * 1024
#: `sandbox.services.files.FILE_KINDS`, spelt out for the schema (a test holds them equal).
FileKind = Literal["photo", "sticker", "animated-sticker", "video", "document"]


def _upload_limit() -> tuple[int, str]:
    return max_file_bytes() + UPLOAD_FORM_ROOM, (
        f"a file of at most {max_file_bytes():,} bytes ({LIMIT_SETTING}) and {UPLOAD_FORM_ROOM:,} for the form"
    )


limit_route_body("api:sandbox_file", _upload_limit)


class MediaPartOut(Schema):
    media_kind: str
    mime: str
    unique_id: str
    size: int
    sticker_format: str | None = None
    duration: float | None = None
    file_name: str | None = None


class SandboxFileOut(SandboxMessageOut):
    media: list[MediaPartOut]


@router.post(
    "/{agent_id}/sandbox/files",
    response={201: SandboxFileOut, **ERRORS},
    summary="Send a media file to a sandbox agent",
    url_name="sandbox_file",
)
def sandbox_file_view(
    request: HttpRequest,
    agent_id: RowId,
    file: File[UploadedFile],
    kind: Form[FileKind | None] = None,
    as_name: Form[str] = "You",
    group: Form[str] = "",
    chat_id: Form[int | None] = None,
    reply_to: Form[int | None] = None,
    caption: Form[str] = "",
):
    """A person sends `file` as `kind` (default: what its bytes are, never its name; a given kind
    sends a mislabelled file as that kind). The chat is named as for a message (`group` or
    `chat_id`, within your grants). A file past CINDY_SANDBOX_MAX_FILE_BYTES answers 413."""
    agent = visible_agent(request, agent_id, SANDBOX_WRITE)
    if chat_id is not None and group.strip():
        raise ApiError(
            422, "give chat_id or group, not both: chat_id already names the chat", field="chat_id"
        )
    if len(caption) > 4096:
        raise ApiError(
            422, f"caption: {len(caption):,} characters; Telegram takes at most 4,096", field="caption"
        )
    form = ChatForm({"agent": agent.pk, "as_name": as_name, "group": group})
    if not form.is_valid():
        detail, field = _form_errors(form)
        raise ApiError(422, detail, field=field)
    if file.size is None or file.size > max_file_bytes():
        raise ApiError(
            413,
            f"file: {file.name!r} is {file.size or 0:,} bytes; the sandbox takes at most "
            f"{max_file_bytes():,} ({LIMIT_SETTING})",
            field="file",
        )
    try:
        if file.size == 0:
            raise SandboxError(f"file: {file.name!r} is empty (0 bytes): send a file with something in it")
        file.seek(0)
        part = file_part(file, name=file.name or "file", size=file.size, kind=kind)
        message = sandbox_say(
            agent=agent,
            text=caption.strip(),
            as_name=form.cleaned_data["as_name"],
            group=form.cleaned_data["group"] or None,
            reply_to=reply_to,
            media=[part],
            within=visible_agent_ids(request.user),
            chat_id=chat_id,
        )
    except SandboxError as exc:
        detail = str(exc)
        raise ApiError(
            422, detail, field="file" if detail.startswith("file") else _error_field(detail)
        ) from None
    return Status(201, {**sandbox_message_row(message), "media": message.media})
