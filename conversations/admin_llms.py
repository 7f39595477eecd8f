"""The admin's "LLMs and prices" page: the global LLM parameters, the models in use and on offer
with their prices, and OpenRouter's model list (refreshed by a worker) when a key is set.

It is the changelist of `OfferedModel`, so it sits in the admin index beside the price table.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from agents.access import agents_for
from agents.models import Agent
from cindy_site.admin_utils import ReadOnlyAdmin, short
from conversations.models import Conversation, ModelPrice, OfferedModel, Translation
from llm.offered import openrouter_models_refresh_request, openrouter_models_stale
from llm.routing import GEMINI_DEFAULT, GROK_DEFAULT, UnknownModelError, is_default_name, resolve
from llm.usage import price_for

_KEYS = {
    "gemini": "GOOGLE_GEMINI_API_KEY",
    "grok": "GROK_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
#: The OpenRouter table shows at most this many rows (filtered by the search box).
OFFERED_ROWS = 300


def _price(provider: str, model: str) -> dict[str, Any]:
    price = price_for(provider, model)
    if price is None:
        return {"known": False}
    return {
        "known": True,
        "prefix": price.model_prefix,
        "input": price.input_per_million,
        "cached": price.cached_input_per_million,
        "output": price.output_per_million,
        "image_output": price.image_output_per_million,
        "price_id": price.pk,
    }


def _route_row(name: str, used_by: list[str]) -> dict[str, Any]:
    try:
        route = resolve(name)
    except UnknownModelError as exc:
        return {"name": name, "error": str(exc), "used_by": used_by}
    return {
        "name": name,
        "route": f"{route.provider}/{route.model}",
        "key_set": bool(getattr(settings, _KEYS[route.provider], "")),
        "key_name": _KEYS[route.provider],
        "price": _price(route.provider, route.model),
        "used_by": used_by,
        "error": "",
    }


def llm_overview(*, search: str = "", agents=None) -> dict[str, Any]:
    """Everything the page shows, in a fixed number of queries (prices are read once, then matched).
    "Used by" names the agents of `agents` (a queryset: those the viewer may see; default all)."""
    used: dict[str, list[str]] = {}
    agents = Agent.objects.all() if agents is None else agents
    for agent_name, llm in agents.order_by("name").values_list("name", "llm"):
        used.setdefault(settings.DEFAULT_AGENT_LLM if is_default_name(llm) else llm, []).append(agent_name)
    overrides = (
        Conversation.objects.exclude(llm_model="").values_list("llm_model", flat=True).distinct().order_by()
    )
    for llm in overrides:
        used.setdefault(llm, []).append("conversation overrides")
    site = {
        "DEFAULT_AGENT_LLM": settings.DEFAULT_AGENT_LLM,
        "MEDIA_MODEL": settings.MEDIA_MODEL,
        "TRANSLATION_MODEL": settings.TRANSLATION_MODEL or "(the conversation's LLM)",
        "CINDY_IMAGE_MODEL": settings.CINDY_IMAGE_MODEL,
        "CINDY_SPEECH_MODEL": settings.CINDY_SPEECH_MODEL,
    }
    for name in (
        settings.DEFAULT_AGENT_LLM,
        settings.MEDIA_MODEL,
        settings.TRANSLATION_MODEL,
        settings.CINDY_IMAGE_MODEL,
    ):
        if name:
            used.setdefault(name, [])
    for name in ("gemini", GEMINI_DEFAULT, "grok", GROK_DEFAULT):
        used.setdefault(name, [])
    offered = OfferedModel.objects.filter(provider="openrouter")
    if search:
        offered = offered.filter(Q(model__icontains=search) | Q(name__icontains=search))
    offered_rows = list(offered.order_by("model")[:OFFERED_ROWS])
    return {
        "site": site,
        "parameters": {
            "LLM_TIMEOUT_SECONDS": settings.LLM_TIMEOUT_SECONDS,
            "LLM_MAX_RETRIES": settings.LLM_MAX_RETRIES,
            "MEDIA_DESC_BUDGET_PER_TICK": settings.MEDIA_DESC_BUDGET_PER_TICK,
            "RETRIEVAL_MAX_ROUNDS": settings.RETRIEVAL_MAX_ROUNDS,
            "CINDY_HISTORY_SIZE": settings.CINDY_HISTORY_SIZE,
            "CINDY_IMAGES_PER_DAY": settings.CINDY_IMAGES_PER_DAY,
            "CINDY_IMAGES_AFTER_UNTRUSTED": settings.CINDY_IMAGES_AFTER_UNTRUSTED,
        },
        "keys": [{"provider": p, "name": n, "set": bool(getattr(settings, n, ""))} for p, n in _KEYS.items()],
        "routes": [_route_row(name, sorted(set(agents))) for name, agents in sorted(used.items())],
        "prices": list(ModelPrice.objects.all()),
        "openrouter_key": bool(settings.OPENROUTER_API_KEY),
        "offered": offered_rows,
        "offered_total": OfferedModel.objects.filter(provider="openrouter").count(),
        "offered_fetched": max((row.fetched for row in offered_rows), default=None),
        "search": search,
        "zero": Decimal("0"),
    }


class OfferedModelAdmin(admin.ModelAdmin):
    """The changelist is the overview page; rows are written only by the refresh task."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self):
        refresh = path(
            "refresh/",
            self.admin_site.admin_view(self.refresh_view),
            name="conversations_offeredmodel_refresh",
        )
        return [refresh, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        if settings.OPENROUTER_API_KEY and openrouter_models_stale():
            openrouter_models_refresh_request()
        context = {
            **self.admin_site.each_context(request),
            "title": "LLMs and prices",
            "opts": self.model._meta,
            **llm_overview(search=request.GET.get("q", "").strip(), agents=agents_for(request.user)),
        }
        return TemplateResponse(request, "admin/conversations/llms.html", context)

    def refresh_view(self, request: HttpRequest) -> HttpResponse:
        """Refilling the cached model list is part of viewing it: the view permission suffices."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return redirect("admin:conversations_offeredmodel_changelist")
        if not settings.OPENROUTER_API_KEY:
            messages.error(request, "Set OPENROUTER_API_KEY to list OpenRouter's models.")
        else:
            openrouter_models_refresh_request()
            messages.info(request, "Refreshing OpenRouter's model list on the workers; reload in a moment.")
        return redirect("admin:conversations_offeredmodel_changelist")


class TranslationAdmin(ReadOnlyAdmin):
    """The translation cache, for looking things up; rows are written by the translation task."""

    list_display = ["created", "language", "source_preview", "translation_preview"]
    list_filter = ["language"]
    search_fields = ["source_text", "translated_text"]
    date_hierarchy = "created"

    @admin.display(description="Text")
    def source_preview(self, translation: Translation) -> str:
        return short(translation.source_text, 80)

    @admin.display(description="Translation")
    def translation_preview(self, translation: Translation) -> str:
        return short(translation.translated_text, 80)


def register_llm_admin() -> None:
    admin.site.register(OfferedModel, OfferedModelAdmin)
    admin.site.register(Translation, TranslationAdmin)
