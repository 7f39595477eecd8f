"""Admin pages for an agent's Telegram account: profile, photos, contacts, joining chats, sign-in.

Every change is a gateway request (agents/services/telegram_requests.py); the page shows the
account as the newest finished request read it, each request's outcome ("request failed: reason"),
and reloads itself while a request waits for the gateway. Seeing the pages needs the "view agent"
permission and every change (a POST) "change agent" (`cindy_site/permissions.py`).
"""

from __future__ import annotations

from pathlib import Path

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from agents import admin_parts, selectors
from agents.access import visible_to
from agents.models import Agent, GatewayRequest
from agents.models import Transport as TransportKind
from agents.services import telegram_requests as requests
from cindy_site import clock
from cindy_site.permissions import permission_by_method

Kind = GatewayRequest.Kind
ACCOUNT_PAGE_KINDS = (*requests.ACCOUNT_KINDS, Kind.JOIN_CHAT, Kind.LEAVE_CHAT, Kind.SET_MUTED)
#: Profile photos are served only as the type their bytes show.
IMAGE_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}


class ProfileForm(forms.Form):
    first_name = forms.CharField(max_length=64)
    last_name = forms.CharField(max_length=64, required=False)
    username = forms.CharField(max_length=33, required=False, help_text="Without @; empty removes it")
    about = forms.CharField(
        label="Bio", max_length=140, required=False, widget=forms.Textarea(attrs={"rows": 3})
    )


class PhotoForm(forms.Form):
    photo = forms.FileField(help_text="JPEG or PNG; Telegram crops it to a square")


class LibraryPhotoForm(forms.Form):
    """A picture of the agent's media library as a new profile photo (choices: media_catalog's)."""

    unique_id = forms.ChoiceField(
        label="From the media library",
        help_text="A photo the agent keeps in its library (on Telegram, in its Saved Messages)",
    )

    def __init__(self, *args, agent: Agent, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["unique_id"].choices = admin_parts.choices(admin_parts.LIBRARY_PICTURES, [], agent)


class ContactForm(forms.Form):
    target = forms.CharField(label="User", max_length=64, help_text="Numeric user id or @username")
    first_name = forms.CharField(max_length=64)
    last_name = forms.CharField(max_length=64, required=False)


class JoinForm(forms.Form):
    target = forms.CharField(
        label="Group or channel", max_length=200, help_text="@username, https://t.me/name or an invite link"
    )


class CodeForm(forms.Form):
    code = forms.CharField(max_length=16, help_text="The code Telegram sent to the account's app or by SMS")


class PasswordForm(forms.Form):
    password = forms.CharField(widget=forms.PasswordInput(render_value=False), max_length=256)


def _online(agent: Agent) -> bool:
    lease = getattr(agent, "lease", None)
    return lease is not None and lease.expires_at > clock.now()


def _request_rows(agent: Agent, kinds) -> list[dict]:
    rows = []
    for req in selectors.telegram_requests_recent(agent=agent, kinds=kinds):
        rows.append(
            {
                "created": req.created,
                "what": requests.gateway_request_describe(req),
                "status": req.get_status_display(),
                "failed": req.status == GatewayRequest.Status.FAILED,
                "error": req.error,
            }
        )
    return rows


def _apply(request: HttpRequest, form: forms.Form, create) -> bool:
    """Run a service with the form's data; show its validation errors on the form. True when queued."""
    if not form.is_valid():
        return False
    try:
        create(**form.cleaned_data)
    except ValidationError as exc:
        if hasattr(exc, "error_dict"):
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            form.add_error(None, exc.messages)
        return False
    messages.info(request, "Sent to the gateway: this page shows the result once Telegram answers.")
    return True


#: Reading the account needs "view agent"; every change (a gateway request) needs "change agent".
agent_account_permission = permission_by_method(read="agents.view_agent", write="agents.change_agent")


@agent_account_permission
def account_page(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(visible_to(request.user, Agent.objects.select_related("lease")), pk=agent_id)
    # Asked before the snapshot is read: a request that finishes in between then still reloads the
    # page, which shows its result (read the other way round, the page showed neither, for good).
    waiting = selectors.telegram_request_waiting(agent=agent, kinds=ACCOUNT_PAGE_KINDS)
    snapshot = selectors.account_snapshot(agent=agent)
    data = (snapshot.result or {}) if snapshot else {}
    profile = data.get("profile") or {}
    initial = {k: profile.get(k, "") for k in ("first_name", "last_name", "username", "about")}
    forms_by_name = {
        "profile": ProfileForm(initial=initial, prefix="profile"),
        "photo": PhotoForm(prefix="photo"),
        "library_photo": LibraryPhotoForm(prefix="library", agent=agent),
        "contact": ContactForm(prefix="contact"),
        "join": JoinForm(prefix="join"),
    }
    if request.method == "POST":
        action = request.POST.get("action", "")
        queued = False
        if action == "read":
            requests.account_request_read(agent=agent)
            queued = True
        elif action == "profile":
            form = forms_by_name["profile"] = ProfileForm(request.POST, prefix="profile")
            limit = int(profile.get("about_limit") or 70)
            queued = _apply(
                request,
                form,
                lambda **d: requests.account_request_update_profile(agent=agent, about_limit=limit, **d),
            )
        elif action == "photo":
            form = forms_by_name["photo"] = PhotoForm(request.POST, request.FILES, prefix="photo")
            queued = _apply(
                request, form, lambda photo: requests.account_request_add_photo(agent=agent, upload=photo)
            )
        elif action == "library_photo":
            form = forms_by_name["library_photo"] = LibraryPhotoForm(
                request.POST, prefix="library", agent=agent
            )
            queued = _apply(
                request,
                form,
                lambda unique_id: requests.account_request_add_library_photo(
                    agent=agent, unique_id=unique_id
                ),
            )
        elif action == "delete_photo":
            photo_id = request.POST.get("photo_id", "")
            if not photo_id.lstrip("-").isdigit():
                return HttpResponseBadRequest(
                    f"photo_id is {photo_id!r}: send the numeric id of one of the account's photos",
                    content_type="text/plain; charset=utf-8",
                )
            requests.account_request_delete_photo(agent=agent, photo_id=int(photo_id))
            queued = True
        elif action == "contact":
            form = forms_by_name["contact"] = ContactForm(request.POST, prefix="contact")
            queued = _apply(request, form, lambda **d: requests.account_request_add_contact(agent=agent, **d))
        elif action == "delete_contacts":
            ids = [int(u) for u in request.POST.getlist("user_id") if u.lstrip("-").isdigit()]
            try:
                requests.account_request_delete_contacts(agent=agent, user_ids=ids)
                queued = True
            except ValidationError as exc:
                messages.error(request, " ".join(exc.messages))
        elif action == "join":
            form = forms_by_name["join"] = JoinForm(request.POST, prefix="join")
            queued = _apply(
                request, form, lambda target: requests.chat_request_join(agent=agent, target=target)
            )
        if queued:
            return redirect(request.path)
    photos = [
        {**p, "url": reverse("admin:agents_agent_profile_photo", args=[agent.pk, Path(p["file"]).name])}
        for p in profile.get("photos", [])
        if p.get("file")
    ]
    context = {
        **admin.site.each_context(request),
        "title": f"Telegram account of {agent.name}",
        "agent": agent,
        "opts": Agent._meta,
        "online": _online(agent),
        "sandbox": agent.transport == TransportKind.SANDBOX,
        "snapshot": snapshot,
        "profile": profile,
        "photos": photos,
        "contacts": data.get("contacts", []),
        "forms": forms_by_name,
        "waiting": waiting,
        "rows": _request_rows(agent, ACCOUNT_PAGE_KINDS),
    }
    return TemplateResponse(request, "admin/agents/telegram_account.html", context)


@agent_account_permission
def profile_photo(request: HttpRequest, agent_id: int, name: str) -> FileResponse:
    """A profile photo the gateway saved, for staff only (MEDIA_ROOT is never served as a whole)."""
    folder = (Path(settings.MEDIA_ROOT) / requests.PROFILE_PHOTO_DIR / str(agent_id)).resolve()
    target = (folder / name).resolve()
    if target.parent != folder or not target.is_file():
        raise Http404(f"agent {agent_id} has no saved profile photo {name!r}")
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(target) as image:
            kind = image.format
    except (UnidentifiedImageError, OSError):
        kind = None
    if kind not in IMAGE_TYPES:
        raise Http404(f"{name!r} is not a JPEG or PNG picture")
    response = FileResponse(target.open("rb"), content_type=IMAGE_TYPES[kind])
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@agent_account_permission
def signin_page(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(visible_to(request.user, Agent.objects.select_related("lease")), pk=agent_id)
    code_form, password_form = CodeForm(prefix="code"), PasswordForm(prefix="password")
    if request.method == "POST":
        action = request.POST.get("action", "")
        queued = False
        try:
            if action == "start":
                requests.signin_start(agent=agent)
                queued = True
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        if action == "code":
            code_form = CodeForm(request.POST, prefix="code")
            queued = _apply(
                request, code_form, lambda code: requests.signin_submit_code(agent=agent, code=code)
            )
        elif action == "password":
            password_form = PasswordForm(request.POST, prefix="password")
            queued = _apply(
                request,
                password_form,
                lambda password: requests.signin_submit_password(agent=agent, password=password),
            )
        if queued:
            return redirect(request.path)
    waiting = selectors.telegram_request_waiting(agent=agent, kinds=requests.SIGN_IN_KINDS)  # first: as above
    latest = requests.signin_latest(agent=agent)
    state = (latest.result or {}).get("state", "") if latest else ""
    context = {
        **admin.site.each_context(request),
        "title": f"Sign {agent.name} in to Telegram",
        "agent": agent,
        "opts": Agent._meta,
        "telegram": agent.transport == TransportKind.TELEGRAM,
        "state": state,
        "latest": latest,
        "hint": (latest.result or {}).get("hint", "") if latest else "",
        "via": (latest.result or {}).get("via", "") if latest else "",
        "code_form": code_form,
        "password_form": password_form,
        "waiting": waiting,
        "rows": _request_rows(agent, requests.SIGN_IN_KINDS),
    }
    return TemplateResponse(request, "admin/agents/telegram_signin.html", context)


class TelegramPagesMixin:
    """Adds the account and sign-in pages to the agent admin (see its change page's links)."""

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("<int:agent_id>/telegram/", wrap(account_page), name="agents_agent_telegram"),
            path(
                "<int:agent_id>/telegram/photos/<str:name>",
                wrap(profile_photo),
                name="agents_agent_profile_photo",
            ),
            path("<int:agent_id>/sign-in/", wrap(signin_page), name="agents_agent_signin"),
            *super().get_urls(),
        ]
