"""A conversation's tools on the dashboard: controls (gag, LLM, pending work), the messages with the
task log and translations, the print view and the downloads. Writes go through services and need a
model permission (`CONVERSATION_CONTROL`, `TRANSLATE`); reading needs verified staff only."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from agents.access import visible_to
from agents.models import Agent
from cindy_site.permissions import permission_by_method
from conversations.models import Conversation
from conversations.services.curation import conversation_gag, conversation_llm_set
from conversations.services.media_save import conversation_media_save, media_save_options
from conversations.services.work_queue import (
    WorkQueueError,
    agent_pending_work_delete,
    graph_cancel,
    node_cancel,
)
from dashboard.access import verified_staff_required, visible_conversation_or_404
from dashboard.conversation_tools import conversation_header
from dashboard.exports import export_filename, transcript_html, transcript_markdown
from dashboard.transcript import conversation_transcript
from llm.translation import (
    LANGUAGES,
    cached_translations,
    conversation_translation_request,
    translatable_messages,
)

#: The conversation's controls (gag, LLM, cancelling work) change the conversation.
CONVERSATION_CONTROL = permission_by_method(read=None, write="conversations.change_conversation")
#: A translation runs paid LLM calls and stores their result.
TRANSLATE = permission_by_method(read=None, write="llm.add_translation")
#: Saving a chat's media adds an item to the agent's library (and curates its description).
SAVE_MEDIA = permission_by_method(read=None, write="media_catalog.add_libraryitem")


def _conversation(request: HttpRequest, conversation_id: int) -> Conversation:
    return visible_conversation_or_404(request, conversation_id)


def _back(request: HttpRequest, conversation: Conversation) -> HttpResponse:
    """Back to the page the form was on (only this site's conversation pages), else the main one."""
    target = request.POST.get("next", "")
    base = reverse("dashboard:conversation", args=[conversation.pk])
    return redirect(target if target.startswith(base) else base)


def _language(value: str | None) -> str | None:
    return value if value in LANGUAGES else None


def _translated(conversation: Conversation, language: str) -> tuple[dict[int, str], int]:
    """The log's cached translations (message id -> text) and how many texts still lack one."""
    texts = translatable_messages(conversation)
    found = cached_translations(texts, language=language)
    return found, len({m.text for m in texts if m.message_id not in found})


@verified_staff_required
@require_GET
def conversation_log(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    language = _language(request.GET.get("lang"))
    translations, missing = _translated(conversation, language) if language else ({}, 0)
    entries = conversation_transcript(conversation, translations=translations)
    context = conversation_header(conversation, request, tab="log")
    context.update({"entries": entries, "shown_language": language, "missing": missing})
    shown = [m for e in entries if e["type"] == "message" for m in e["media"]]
    context["save_options"] = media_save_options(conversation=conversation, parts=shown)
    return render(request, "dashboard/conversation_log.html", context)


@verified_staff_required
@require_GET
def conversation_translations(request: HttpRequest, conversation_id: int) -> JsonResponse:
    """The cached translations of the log's messages, polled while a translation runs."""
    conversation = _conversation(request, conversation_id)
    language = _language(request.GET.get("lang"))
    if language is None:
        return JsonResponse({"error": f"choose a language: {', '.join(LANGUAGES)}"}, status=400)
    found, missing = _translated(conversation, language)
    return JsonResponse({"translations": {str(k): v for k, v in found.items()}, "missing": missing})


@verified_staff_required
@TRANSLATE
@require_POST
def conversation_translate(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    language = request.POST.get("language", "")
    try:
        conversation_translation_request(conversation=conversation, language=language)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("dashboard:conversation_log", conversation.pk)
    messages.info(request, f"Translating into {language} on the workers; translations appear as they arrive.")
    return redirect(f"{reverse('dashboard:conversation_log', args=[conversation.pk])}?lang={language}")


@verified_staff_required
@require_GET
def conversation_print(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    entries = conversation_transcript(conversation, limit=None, embed_media=True)
    return HttpResponse(transcript_html(conversation, entries, printable=True))


@verified_staff_required
@require_GET
def conversation_download(request: HttpRequest, conversation_id: int, fmt: str) -> HttpResponse:
    if fmt not in ("md", "html"):
        raise Http404(f"no download as {fmt!r}: use .md or .html")
    conversation = _conversation(request, conversation_id)
    entries = conversation_transcript(conversation, limit=None, embed_media=True)
    if fmt == "md":
        body, content_type = transcript_markdown(conversation, entries), "text/markdown; charset=utf-8"
    else:
        body, content_type = (
            transcript_html(conversation, entries, printable=False),
            "text/html; charset=utf-8",
        )
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{export_filename(conversation, fmt)}"'
    return response


@verified_staff_required
@CONVERSATION_CONTROL
@require_POST
def conversation_gag_view(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    gagged = request.POST.get("gagged") == "1"
    conversation_gag(conversation=conversation, gagged=gagged, by=request.user.get_username())
    messages.success(
        request, "Gagged: messages are recorded, the agent does not act." if gagged else "Ungagged."
    )
    return _back(request, conversation)


@verified_staff_required
@CONVERSATION_CONTROL
@require_POST
def conversation_llm_view(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    value = request.POST.get("llm_model", "")
    try:
        conversation_llm_set(conversation=conversation, llm_model=value, by=request.user.get_username())
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"LLM set to {value.strip() or 'the agent default'}.")
    return _back(request, conversation)


@verified_staff_required
@CONVERSATION_CONTROL
@require_POST
def conversation_work_cancel(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _conversation(request, conversation_id)
    by = request.user.get_username()
    try:
        if request.POST.get("node"):
            node_id = int(request.POST["node"])
            if not conversation.nodes.filter(pk=node_id).exists():
                raise WorkQueueError(f"node {node_id} is not in this conversation")
            node = node_cancel(node_id=node_id, by=by)
            messages.success(request, f"{node.kind} #{node.pk} cancelled.")
        else:
            count = graph_cancel(conversation=conversation, by=by)
            messages.success(request, f"Pending work cancelled: {count} node(s).")
    except (WorkQueueError, ValueError) as exc:
        messages.error(request, str(exc))
    return _back(request, conversation)


@verified_staff_required
@CONVERSATION_CONTROL
@require_POST
def agent_work_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(visible_to(request.user, Agent.objects.all()), pk=agent_id)
    count = agent_pending_work_delete(agent=agent, by=request.user.get_username())
    messages.success(request, f"All pending work of {agent.name} cancelled: {count} graph(s).")
    conversation_id = request.POST.get("conversation", "")
    if conversation_id.isdigit():
        return redirect("dashboard:conversation", int(conversation_id))
    return redirect("dashboard:index")


@verified_staff_required
@SAVE_MEDIA
@require_POST
def conversation_media_save_view(
    request: HttpRequest, conversation_id: int, message_id: int, unique_id: str
) -> HttpResponse:
    """A message's "Save to library" form: curate the media's description and add it to the library."""
    conversation = _conversation(request, conversation_id)
    try:
        saved = conversation_media_save(
            conversation=conversation,
            message_id=message_id,
            unique_id=unique_id,
            description=request.POST.get("description", ""),
            by=request.user.get_username(),
        )
    except ValidationError as exc:
        fields = exc.message_dict if hasattr(exc, "error_dict") else {}
        text = "; ".join(f"{name}: {' '.join(found)}" for name, found in fields.items())
        return HttpResponseBadRequest(
            f"Not saved: {text or ' '.join(exc.messages)}", content_type="text/plain; charset=utf-8"
        )
    messages.success(request, saved.message)
    return _back(request, conversation)
