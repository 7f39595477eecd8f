"""The sandbox chat: talk to a sandbox agent as a simulated Telegram user, in a DM or a group.

A chat has a URL (`?agent=…&as_name=…&group=…`, and `&topic=…` for a topic of a forum group), and a
GET of it only reads: it shows the chat when
it exists and otherwise offers to start it. Starting a chat (which creates the simulated person,
the group and their memberships) is the setup form's POST, answered with a redirect to the chat's
URL. Sending and reacting are POSTs answered with JSON; the messages themselves, the agent's typing
and its replies reach the page over the dashboard socket, like everything the gateway writes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import (
    FileResponse,
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from agents.access import has_agent_perm
from agents.models import Agent
from cindy_site.permissions import permission_by_method
from conversations.models import Conversation
from conversations.transport.base import TYPING_UPDATE_SECONDS
from dashboard import selectors
from dashboard.access import request_user_is_verified, verified_staff_required, viewer_agent_ids
from sandbox import selectors as sandbox_selectors
from sandbox.forms import (
    MAX_PHOTO_BYTES,
    PHOTO_DIR,
    ChatForm,
    ReactForm,
    SendForm,
    TypingForm,
    sniff_image,
)
from sandbox.models import SandboxChat, SandboxTopic, SandboxUser
from sandbox.permissions import SANDBOX_WRITE
from sandbox.services.chats import (
    SandboxError,
    sandbox_chat_for,
    sandbox_find_chat,
    sandbox_mark_unread,
    sandbox_react,
    sandbox_say,
    sandbox_topic,
    sandbox_typing,
)

REACTIONS = ["👍", "❤️", "😂", "😮", "😢", "🔥", "👎"]


def _agent_peer_id(chat: SandboxChat, person_user_id: int) -> int:
    """The peer id under which the agent's Conversation mirrors this chat (see SandboxTransport)."""
    return chat.peer_id if chat.kind == SandboxChat.Kind.GROUP else person_user_id


def _chat_form(request: HttpRequest, *args: Any, **kwargs: Any) -> ChatForm:
    """The chat setup form, offering only the sandbox agents the user may see."""
    form = ChatForm(*args, **kwargs)
    ids = viewer_agent_ids(request)
    if ids is not None:
        form.fields["agent"].queryset = form.fields["agent"].queryset.filter(pk__in=ids)
    return form


@verified_staff_required
@permission_by_method(read=None, write=SANDBOX_WRITE)
def sandbox_chat(request: HttpRequest) -> HttpResponse:
    agents = selectors.sandbox_agents(agent_ids=viewer_agent_ids(request))
    context: dict[str, Any] = {"nav": "sandbox", "agents": agents, "chat": None}
    if request.method == "POST":
        return _start_chat(request, context)
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD", "POST"])
    if "agent" not in request.GET:
        initial = {"agent": agents[0].pk} if agents else {}
        context["form"] = _chat_form(request, initial={"as_name": "You", **initial})
        return render(request, "dashboard/sandbox.html", context)

    form = _chat_form(request, request.GET)
    context["form"] = form
    if not form.is_valid():
        return render(request, "dashboard/sandbox.html", context, status=400)
    agent, as_name = form.cleaned_data["agent"], form.cleaned_data["as_name"]
    if agent not in agents:
        raise Http404(f"no sandbox agent {agent.pk} that you may see")
    group = form.cleaned_data["group"] or None
    within = viewer_agent_ids(request)
    chat = sandbox_find_chat(agent=agent, as_name=as_name, group=group, within=within)
    topic = None
    if chat is not None and form.cleaned_data["topic"]:
        topic = SandboxTopic.objects.filter(chat=chat, title=form.cleaned_data["topic"]).first()
    if chat is None or (form.cleaned_data["topic"] and topic is None):
        context["not_started"] = True
        return render(request, "dashboard/sandbox.html", context)
    # sandbox_find_chat found both users; the same look-ups give them here.
    me = SandboxUser.objects.filter(agent=agent).first()
    person = SandboxUser.objects.filter(agent__isnull=True, name=as_name).first()
    context.update(
        _chat_context(agent=agent, chat=chat, me=me, person=person, as_name=as_name, group=group, topic=topic)
    )
    context["group_titles"] = sandbox_selectors.sandbox_group_titles(agent=agent, within=within)
    return render(request, "dashboard/sandbox.html", context)


def _start_chat(request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
    """The setup form's POST: create what the chat needs, then show it at its own URL."""
    form = _chat_form(request, request.POST)
    context["form"] = form
    if not form.is_valid():
        return render(request, "dashboard/sandbox.html", context, status=400)
    agent, as_name = form.cleaned_data["agent"], form.cleaned_data["as_name"]
    if not has_agent_perm(request.user, SANDBOX_WRITE, agent):
        raise Http404(f"no sandbox agent {agent.pk} that you may talk to")
    group, topic = form.cleaned_data["group"], form.cleaned_data["topic"]
    try:
        chat = sandbox_chat_for(
            agent=agent, as_name=as_name, group=group or None, within=viewer_agent_ids(request)
        )
        if topic:
            sandbox_topic(chat=chat, title=topic)
    except SandboxError as exc:
        form.add_error(None, str(exc))
        return render(request, "dashboard/sandbox.html", context, status=400)
    query = urlencode(
        {
            "agent": agent.pk,
            "as_name": as_name,
            **({"group": group} if group else {}),
            **({"topic": topic} if topic else {}),
        }
    )
    return HttpResponseRedirect(f"{reverse('dashboard:sandbox')}?{query}", status=303)


def _chat_context(
    *,
    agent: Agent,
    chat: SandboxChat,
    me: SandboxUser,
    person: SandboxUser,
    as_name: str,
    group: str | None,
    topic: SandboxTopic | None = None,
) -> dict[str, Any]:
    """What the chat page shows; in a forum, one topic of it (General without `topic`), with links to
    the others: each topic is a conversation of its own for the agent."""
    conversation = Conversation.objects.filter(
        agent=agent, peer_id=_agent_peer_id(chat, person.user_id), topic_id=topic.topic_id if topic else 0
    ).first()
    base = {"agent": agent.pk, "as_name": as_name, "group": group or ""}
    topics = [
        {
            "title": t.title,
            "current": topic is not None and t.pk == topic.pk,
            "query": urlencode({**base, "topic": t.title}),
        }
        for t in chat.topics.all()
    ]
    return {
        "chat": chat,
        "agent": agent,
        "topic": topic,
        "topics": topics,
        "general_query": urlencode(base),
        "stickers": sandbox_selectors.agent_stickers(agent=agent),
        "max_photo_mb": MAX_PHOTO_BYTES // (1024 * 1024),
        "config": {
            "chat_id": chat.pk,
            "chat_kind": chat.kind,
            "agent_id": agent.pk,
            "agent_name": agent.name,
            "agent_handle": me.username or agent.name,
            "as_name": as_name,
            "group": group or "",
            "forum": chat.forum,
            "topic": topic.title if topic else "",
            "topic_id": topic.topic_id if topic else None,
            "my_user_id": person.user_id,
            "peer_id": _agent_peer_id(chat, person.user_id),
            "conversation_id": conversation.pk if conversation else None,
            "conversation": selectors.conversation_row(conversation_id=conversation.pk)
            if conversation
            else None,
            "events": selectors.recent_events(conversation_id=conversation.pk, limit=50)
            if conversation
            else [],
            "last_event_id": selectors.last_event_id(),
            "reactions": REACTIONS,
        },
    }


def _form_errors(form: Any) -> dict[str, list[str]]:
    return {field: [str(e) for e in errors] for field, errors in form.errors.items()}


def _refuse(request: HttpRequest, agent: Agent | None = None) -> JsonResponse | None:
    if not request_user_is_verified(request):
        reason = "Log in to the admin with your one-time code first."
    elif not request.user.has_perm(SANDBOX_WRITE):
        reason = f"Writing in the sandbox needs the permission {SANDBOX_WRITE}."
    elif agent is not None and not has_agent_perm(request.user, SANDBOX_WRITE, agent):
        reason = f"You have no access to the agent {agent.name}: an owner grants it in the admin."
    else:
        return None
    return JsonResponse({"ok": False, "errors": {"__all__": [reason]}}, status=403)


def _form_data(request: HttpRequest, form: Any) -> tuple[dict[str, Any] | None, JsonResponse | None]:
    """A sandbox control's form data, once the caller may write in the sandbox and act for the form's
    agent; else the answer to give instead (403 naming why, or 400 with the field errors)."""
    if (refused := _refuse(request)) is not None:
        return None, refused
    if not form.is_valid():
        return None, JsonResponse({"ok": False, "errors": _form_errors(form)}, status=400)
    data = form.cleaned_data
    if (refused := _refuse(request, data["agent"])) is not None:
        return None, refused
    return data, None


@require_POST
def sandbox_send(request: HttpRequest) -> JsonResponse:
    form = SendForm(request.POST, request.FILES)
    data, refused = _form_data(request, form)
    if refused is not None:
        return refused
    try:
        message = sandbox_say(
            agent=data["agent"],
            text=data["text"],
            as_name=data["as_name"],
            group=data["group"] or None,
            reply_to=data["reply_to"],
            media=form.media_parts() or None,
            topic=data["topic"] or None,
            within=viewer_agent_ids(request),
        )
    except SandboxError as exc:
        return JsonResponse({"ok": False, "errors": {"__all__": [str(exc)]}}, status=400)
    return JsonResponse({"ok": True, "message": selectors.sandbox_message_row(message)})


@require_POST
def sandbox_typing_view(request: HttpRequest) -> JsonResponse:
    """The person types in the page: the agent sees a typing update, as `manage.py sandbox typing`
    sends one (Telegram's lasts about six seconds; the page renews it while typing goes on)."""
    form = TypingForm(request.POST)
    data, refused = _form_data(request, form)
    if refused is not None:
        return refused
    try:
        sandbox_typing(
            agent=data["agent"],
            as_name=data["as_name"],
            seconds=TYPING_UPDATE_SECONDS if data["typing"] else 0,
        )
    except SandboxError as exc:
        return JsonResponse({"ok": False, "errors": {"__all__": [str(exc)]}}, status=400)
    return JsonResponse({"ok": True})


@require_POST
def sandbox_react_view(request: HttpRequest) -> JsonResponse:
    form = ReactForm(request.POST)
    data, refused = _form_data(request, form)
    if refused is not None:
        return refused
    try:
        message = sandbox_react(
            agent=data["agent"],
            message_id=data["message_id"],
            emoji=data["emoji"],
            as_name=data["as_name"],
            group=data["group"] or None,
            within=viewer_agent_ids(request),
        )
    except SandboxError as exc:
        return JsonResponse({"ok": False, "errors": {"__all__": [str(exc)]}}, status=400)
    return JsonResponse({"ok": True, "message": selectors.sandbox_message_row(message)})


@require_POST
def sandbox_mark_unread_view(request: HttpRequest) -> HttpResponse:
    """Mark the chat unread on the agent's account, as whoever holds its phone would (a callout the
    agent answers: docs/engine.md, "Attention"); then show the chat again."""
    form = ChatForm(request.POST)
    data, refused = _form_data(request, form)
    if refused is not None:
        return refused
    group = data["group"] or None
    try:
        sandbox_mark_unread(
            agent=data["agent"], as_name=data["as_name"], group=group, within=viewer_agent_ids(request)
        )
    except SandboxError as exc:
        return JsonResponse({"ok": False, "errors": {"__all__": [str(exc)]}}, status=400)
    query = urlencode(
        {"agent": data["agent"].pk, "as_name": data["as_name"], **({"group": group} if group else {})}
    )
    return HttpResponseRedirect(f"{reverse('dashboard:sandbox')}?{query}", status=303)


@verified_staff_required
def sandbox_photo(request: HttpRequest, name: str) -> FileResponse:
    """A photo uploaded to the sandbox, for staff only (MEDIA_URL is served in development alone)."""
    folder = (Path(settings.MEDIA_ROOT) / PHOTO_DIR).resolve()
    path = (folder / name).resolve()
    if path.parent != folder or not path.is_file():
        raise Http404(f"no sandbox photo named {name!r}")
    with path.open("rb") as handle:
        sniffed = sniff_image(handle.read(16))
    if sniffed is None:
        raise Http404(f"{name!r} is not an image")
    # Served only as the image type its bytes show (never the uploader's claim), not sniffable,
    # and sandboxed should a browser ever open it as a document.
    response = FileResponse(path.open("rb"), content_type=sniffed[0])
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@require_safe
@verified_staff_required
def sandbox_voice(request: HttpRequest, name: str) -> HttpResponse:
    """A voice note an agent sent in the sandbox, for staff only: served only when it is an OGG file.

    Byte ranges are answered (206), as a browser's audio player reads the end of an OGG file for its
    duration; without them it shows the note as a stream of unknown length.
    """
    folder = (Path(settings.MEDIA_ROOT) / PHOTO_DIR).resolve()
    path = (folder / name).resolve()
    if path.parent != folder or not path.is_file() or not name.endswith(".ogg"):
        raise Http404(f"no sandbox voice note named {name!r}")
    data = path.read_bytes()
    if not data.startswith(b"OggS"):
        raise Http404(f"{name!r} is not an OGG file")
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers.get("Range", "").strip())
    start, end = 0, len(data) - 1
    if match and (match.group(1) or match.group(2)):
        if match.group(1):
            start = int(match.group(1))
            end = min(int(match.group(2)), end) if match.group(2) else end
        else:  # the last N bytes
            start = max(0, len(data) - int(match.group(2)))
        if start > end:
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{len(data)}"
            return response
        response = HttpResponse(data[start : end + 1], status=206, content_type="audio/ogg")
        response["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
    else:
        response = HttpResponse(data, content_type="audio/ogg")
    response["Accept-Ranges"] = "bytes"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
