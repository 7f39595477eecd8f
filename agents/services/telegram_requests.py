"""Telegram work an operator asks for in the admin, written as gateway requests.

The web process never talks to Telegram: each function validates what the operator typed, then
stores a `GatewayRequest` that the gateway holding the agent runs (engine/requests.py,
engine/account_requests.py, engine/signin.py). Pages read the outcome back from the request.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from agents.models import Agent, GatewayRequest
from agents.models import Transport as TransportKind
from agents.signals import gateway_request_created
from agents.telegram_targets import TargetError, parse_join_target, parse_user_target
from cindy_site.clock import now

Kind = GatewayRequest.Kind
Status = GatewayRequest.Status
#: Kinds whose result carries the account's profile and contacts (see engine/account_requests.py).
ACCOUNT_KINDS = (
    Kind.READ_ACCOUNT,
    Kind.UPDATE_PROFILE,
    Kind.ADD_PROFILE_PHOTO,
    Kind.DELETE_PROFILE_PHOTO,
    Kind.ADD_CONTACT,
    Kind.DELETE_CONTACTS,
)
SIGN_IN_KINDS = (Kind.SIGN_IN_START, Kind.SIGN_IN_CODE, Kind.SIGN_IN_PASSWORD)
#: Under MEDIA_ROOT: photos uploaded in the admin, for the gateway to set as profile photos.
PROFILE_UPLOAD_DIR = "profile_uploads"
#: Under MEDIA_ROOT: the account's profile photos as the gateway last saved them, per agent.
PROFILE_PHOTO_DIR = "profile_photos"
MAX_PHOTO_BYTES = 10 * 1024 * 1024
USERNAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{4,31}$")


def gateway_request_create(*, agent: Agent, kind: str, params: dict[str, Any]) -> GatewayRequest:
    request = GatewayRequest.objects.create(agent=agent, kind=kind, params=params, created=now())
    # the agent's gateway runs it at once rather than at its next tick
    gateway_request_created.send(sender=GatewayRequest, request=request)
    return request


def gateway_request_describe(request: GatewayRequest) -> str:
    """What a request asked for, in the operator's words (never a secret: sign-in codes are left out)."""
    params = request.params or {}
    if request.kind == Kind.SET_MUTED:
        return f"{'Mute' if params.get('muted') else 'Unmute'} chat {params.get('peer_id')}"
    if request.kind == Kind.JOIN_CHAT:
        return f"Join {params.get('target', '')}"
    if request.kind == Kind.LEAVE_CHAT:
        return f"Leave chat {params.get('peer_id')}"
    if request.kind == Kind.ADD_CONTACT:
        return f"Add contact {params.get('target', '')}"
    if request.kind == Kind.DELETE_CONTACTS:
        return f"Delete contact(s) {', '.join(str(u) for u in params.get('user_ids', []))}"
    if request.kind == Kind.ADD_PROFILE_PHOTO and params.get("library"):
        return f"Add profile photo {params['library']} from the media library"
    if request.kind == Kind.DELETE_PROFILE_PHOTO:
        return f"Delete profile photo {params.get('photo_id', '')}"
    if request.kind == Kind.SAVE_TO_LIBRARY:
        return f"Save media {params.get('unique_id', '')} to the library"
    if request.kind == Kind.BACKFILL_PAGE:
        before = params.get("before_id") or 0
        where = f"before #{before}" if before else "from the newest"
        return f"Fetch older history of chat {params.get('peer_id')} {where}"
    return request.get_kind_display()


def conversation_request_mute(*, agent: Agent, peer_id: int, muted: bool) -> GatewayRequest:
    return gateway_request_create(
        agent=agent, kind=Kind.SET_MUTED, params={"peer_id": int(peer_id), "muted": bool(muted)}
    )


def conversation_request_leave(*, agent: Agent, peer_id: int) -> GatewayRequest:
    if peer_id > 0:
        raise ValidationError(f"chat {peer_id} is a private chat: only groups and channels can be left")
    return gateway_request_create(agent=agent, kind=Kind.LEAVE_CHAT, params={"peer_id": int(peer_id)})


def chat_request_join(*, agent: Agent, target: str) -> GatewayRequest:
    try:
        parse_join_target(target)
    except TargetError as exc:
        raise ValidationError({"target": str(exc)}) from None
    return gateway_request_create(agent=agent, kind=Kind.JOIN_CHAT, params={"target": target.strip()})


def account_request_read(*, agent: Agent) -> GatewayRequest:
    return gateway_request_create(agent=agent, kind=Kind.READ_ACCOUNT, params={})


def account_request_update_profile(
    *, agent: Agent, first_name: str, last_name: str, about: str, username: str, about_limit: int = 70
) -> GatewayRequest:
    errors = {}
    if not first_name.strip():
        errors["first_name"] = "Telegram requires a first name"
    if len(about) > about_limit:
        errors["about"] = f"the bio has {len(about)} characters; Telegram allows {about_limit}"
    username = username.strip().removeprefix("@")
    if username and not USERNAME.match(username):
        errors["username"] = (
            f"@{username} is not a valid username: 5 to 32 letters, digits or underscores, starting with a letter"
        )
    if errors:
        raise ValidationError(errors)
    params = {
        "first_name": first_name.strip(),
        "last_name": last_name.strip(),
        "about": about,
        "username": username,
    }
    return gateway_request_create(agent=agent, kind=Kind.UPDATE_PROFILE, params=params)


def account_request_add_photo(*, agent: Agent, upload: UploadedFile) -> GatewayRequest:
    """Store the uploaded picture under MEDIA_ROOT and ask the gateway to set it as a profile photo."""
    from PIL import Image, UnidentifiedImageError

    if upload.size and upload.size > MAX_PHOTO_BYTES:
        raise ValidationError({"photo": f"{upload.name} is {upload.size} bytes; at most {MAX_PHOTO_BYTES}"})
    try:
        image = Image.open(upload)
        image.verify()
    except (UnidentifiedImageError, OSError, SyntaxError):
        raise ValidationError({"photo": f"{upload.name} is not a JPEG or PNG picture"}) from None
    if image.format not in ("JPEG", "PNG"):
        raise ValidationError({"photo": f"{upload.name} is {image.format}: Telegram takes JPEG or PNG"})
    relative = Path(PROFILE_UPLOAD_DIR) / str(agent.pk) / f"{uuid.uuid4().hex}.{image.format.lower()}"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    upload.seek(0)
    with target.open("wb") as handle:
        for chunk in upload.chunks():
            handle.write(chunk)
    return gateway_request_create(agent=agent, kind=Kind.ADD_PROFILE_PHOTO, params={"file": str(relative)})


def account_request_add_library_photo(*, agent: Agent, unique_id: str) -> GatewayRequest:
    """Ask the gateway to set a picture of the agent's media library as a profile photo (the same
    request as an upload, naming the library item instead of a file; engine/account_requests.py
    fetches the picture, from Saved Messages on Telegram)."""
    unique_id = (unique_id or "").strip()
    if not unique_id:
        raise ValidationError({"unique_id": "choose a picture of the agent's media library"})
    return gateway_request_create(agent=agent, kind=Kind.ADD_PROFILE_PHOTO, params={"library": unique_id})


def account_request_delete_photo(*, agent: Agent, photo_id: int) -> GatewayRequest:
    return gateway_request_create(
        agent=agent, kind=Kind.DELETE_PROFILE_PHOTO, params={"photo_id": int(photo_id)}
    )


def account_request_add_contact(
    *, agent: Agent, target: str, first_name: str, last_name: str
) -> GatewayRequest:
    try:
        parse_user_target(target)
    except TargetError as exc:
        raise ValidationError({"target": str(exc)}) from None
    if not first_name.strip():
        raise ValidationError({"first_name": "a contact needs a first name (Telegram shows it in the list)"})
    params = {"target": target.strip(), "first_name": first_name.strip(), "last_name": last_name.strip()}
    return gateway_request_create(agent=agent, kind=Kind.ADD_CONTACT, params=params)


def account_request_delete_contacts(*, agent: Agent, user_ids: list[int]) -> GatewayRequest:
    if not user_ids:
        raise ValidationError("choose at least one contact to delete")
    return gateway_request_create(
        agent=agent, kind=Kind.DELETE_CONTACTS, params={"user_ids": [int(u) for u in user_ids]}
    )


# --- sign-in ------------------------------------------------------------------------------------


def _signin_check(agent: Agent) -> None:
    if agent.transport != TransportKind.TELEGRAM:
        raise ValidationError(f"{agent.name} runs on the sandbox: only telegram agents sign in to Telegram")
    if not agent.phone:
        raise ValidationError(f'{agent.name} has no phone number: set "Phone" on the agent first')
    if agent.disabled:
        raise ValidationError(f"{agent.name} is disabled: enable it first, so that a gateway may run it")


@transaction.atomic
def _signin_request(*, agent: Agent, kind: str, params: dict[str, Any]) -> GatewayRequest:
    """A new sign-in step replaces the agent's earlier pending ones (their secrets are blanked)."""
    GatewayRequest.objects.filter(agent=agent, kind__in=SIGN_IN_KINDS, status=Status.PENDING).update(
        status=Status.FAILED, error="replaced by a newer sign-in step", params={}, finished=now()
    )
    return gateway_request_create(agent=agent, kind=kind, params=params)


def signin_start(*, agent: Agent) -> GatewayRequest:
    _signin_check(agent)
    return _signin_request(agent=agent, kind=Kind.SIGN_IN_START, params={})


def signin_submit_code(*, agent: Agent, code: str) -> GatewayRequest:
    _signin_check(agent)
    code = re.sub(r"[\s-]", "", code or "")
    if not code.isdigit():
        raise ValidationError({"code": "type the digits of the code Telegram sent"})
    started = signin_latest(agent=agent)
    if started is None or (started.result or {}).get("state") != "code_sent":
        raise ValidationError("no code has been sent yet: press “Send a code” first")
    return _signin_request(
        agent=agent,
        kind=Kind.SIGN_IN_CODE,
        params={"code": code, "phone_code_hash": started.result["phone_code_hash"]},
    )


def signin_submit_password(*, agent: Agent, password: str) -> GatewayRequest:
    _signin_check(agent)
    if not password:
        raise ValidationError({"password": "type the account's two-step verification password"})
    return _signin_request(agent=agent, kind=Kind.SIGN_IN_PASSWORD, params={"password": password})


def signin_latest(*, agent: Agent) -> GatewayRequest | None:
    """The newest finished sign-in step that says where the flow stands (a failure does not reset it)."""
    return (
        GatewayRequest.objects.filter(agent=agent, kind__in=SIGN_IN_KINDS, status=Status.DONE)
        .order_by("-created", "-id")
        .first()
    )
