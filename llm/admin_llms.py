"""The admin's "LLMs and prices" page: the global parameters (each editable: `cindy_site/parameters.py`),
the models in use and those offered to personas (editable and ordered here), with their prices, and
OpenRouter's model list (refreshed by a worker) when a key is set.

It is the changelist of `OfferedModel`, so it sits in the admin index beside the price table.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from agents.access import agents_for
from agents.models import Agent
from cindy_site.admin_utils import ReadOnlyAdmin, short
from cindy_site.parameters import parameter
from conversations.models import Conversation
from llm.cache_share import cache_shares, explicit_cache_savings
from llm.models import ModelPrice, OfferedModel, SiteParameter, Translation
from llm.offered import openrouter_models_refresh_request, openrouter_models_stale
from llm.parameter_store import (
    PARAMETERS,
    ParameterError,
    effective_parameters,
    parameter_reset,
    parameter_set,
    parameters_refresh,
    parse_value,
)
from llm.routing import GEMINI_DEFAULT, GROK_DEFAULT, UnknownModelError, is_default_name, resolve
from llm.tasks import MAX_VOICE_CHARACTERS
from llm.usage import price_for
from media_catalog.audio import MAX_AUDIO_SECONDS

_KEYS = {
    "gemini": "GOOGLE_GEMINI_API_KEY",
    "grok": "GROK_API_KEY",
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
#: The OpenRouter table shows at most this many rows (filtered by the search box).
OFFERED_ROWS = 300
#: The prompt caching table's days (today included).
CACHE_DAYS = 7
#: The periods the explicit caches' saving can be shown for (days, today included); the first is the default.
SAVINGS_PERIODS = (30, 7, 90)


def _savings_days(value: str) -> int:
    """The period asked for, when it is one the page offers; else the default."""
    return int(value) if value in {str(days) for days in SAVINGS_PERIODS} else SAVINGS_PERIODS[0]


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
        "audio": _audio_price(price),
        "price_id": price.pk,
    }


def _audio_price(price: ModelPrice) -> str:
    """The audio prices of a price row in words ("" when it has none): audio input tokens (Gemini's
    own rate) and minutes of audio (models billed by duration, such as whisper-1)."""
    parts = []
    if price.audio_input_per_million is not None:
        parts.append(f"{price.audio_input_per_million}/M tokens")
    if price.audio_per_minute:
        parts.append(f"{price.audio_per_minute}/min")
    return " · ".join(parts)


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


def _route_only(name: str) -> dict[str, str]:
    try:
        route = resolve(name)
    except UnknownModelError as exc:
        return {"route": "", "error": str(exc)}
    return {"route": f"{route.provider}/{route.model}", "error": ""}


def _speech_provider() -> str:
    if settings.ELEVENLABS_API_KEY:
        return f"ElevenLabs {settings.CINDY_ELEVENLABS_MODEL} (ELEVENLABS_API_KEY is set)"
    return f"Gemini {settings.CINDY_SPEECH_MODEL} (CINDY_SPEECH_MODEL)"


def llm_overview(*, search: str = "", agents=None, savings_days: int = SAVINGS_PERIODS[0]) -> dict[str, Any]:
    """Everything the page shows, in a fixed number of queries (prices are read once, then matched).
    "Used by" names the agents of `agents` (a queryset: those the viewer may see; default all), whose
    calls the caching tables sum; the explicit caches' saving covers the last `savings_days` days."""
    parameters_refresh()  # this process shows, and resolves with, the values stored now
    default_llm = parameter("DEFAULT_AGENT_LLM")
    used: dict[str, list[str]] = {}
    agents = Agent.objects.all() if agents is None else agents
    for agent_name, llm in agents.order_by("name").values_list("name", "llm"):
        used.setdefault(default_llm if is_default_name(llm) else llm, []).append(agent_name)
    overrides = (
        Conversation.objects.exclude(llm_model="").values_list("llm_model", flat=True).distinct().order_by()
    )
    for llm in overrides:
        used.setdefault(llm, []).append("conversation overrides")
    for name in (
        "DEFAULT_AGENT_LLM",
        "MEDIA_MODEL",
        "TRANSLATION_MODEL",
        "TRANSCRIPTION_MODEL",
        "CINDY_IMAGE_MODEL",
    ):
        if parameter(name):
            used.setdefault(parameter(name), [])
    if not settings.ELEVENLABS_API_KEY:  # the speech model's price, as the voice kind bills it
        used.setdefault(settings.CINDY_SPEECH_MODEL, [])
    for name in ("gemini", GEMINI_DEFAULT, "grok", GROK_DEFAULT):
        used.setdefault(name, [])
    models = list(
        OfferedModel.objects.filter(Q(source=OfferedModel.Source.OPERATOR) | Q(offered=True)).order_by(
            "position", "provider", "model"
        )
    )
    offered = OfferedModel.objects.filter(provider="openrouter")
    if search:
        offered = offered.filter(Q(model__icontains=search) | Q(name__icontains=search))
    offered_rows = list(offered.order_by("model")[:OFFERED_ROWS])
    agent_ids = list(agents.values_list("pk", flat=True))
    return {
        "editable": effective_parameters(),
        "parameters": {
            "LLM_TIMEOUT_SECONDS": settings.LLM_TIMEOUT_SECONDS,
            "LLM_MAX_RETRIES": settings.LLM_MAX_RETRIES,
            "CINDY_IMAGES_AFTER_UNTRUSTED": settings.CINDY_IMAGES_AFTER_UNTRUSTED,
            "Voice notes spoken by": _speech_provider(),
            "Voice note text (voice task)": f"at most {MAX_VOICE_CHARACTERS} characters",
            "Voice notes, audio and video notes transcribed": f"up to {MAX_AUDIO_SECONDS // 60} minutes",
        },
        "keys": [{"provider": p, "name": n, "set": bool(getattr(settings, n, ""))} for p, n in _KEYS.items()],
        "routes": [_route_row(name, sorted(set(agents))) for name, agents in sorted(used.items())],
        "models": [{"row": row, "route": _route_only(row.persona_name)} for row in models],
        "prices": list(ModelPrice.objects.all()),
        "openrouter_key": bool(settings.OPENROUTER_API_KEY),
        "offered": offered_rows,
        "offered_total": OfferedModel.objects.filter(provider="openrouter").count(),
        "offered_fetched": max((row.fetched for row in offered_rows if row.fetched), default=None),
        "search": search,
        "zero": Decimal("0"),
        "cache_days": [share.as_row() for share in cache_shares(days=CACHE_DAYS, agent_ids=agent_ids)],
        "cache_days_count": CACHE_DAYS,
        "explicit_savings": [
            saving.as_row() for saving in explicit_cache_savings(days=savings_days, agent_ids=agent_ids)
        ],
        "savings_days": savings_days,
        "savings_periods": SAVINGS_PERIODS,
        "explicit_turns_per_hour": parameter("CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR"),
    }


class OfferedModelForm(forms.ModelForm):
    """An operator's model: the name personas use (validated by `llm/routing.py`), a label, prices, whether
    it is offered to personas and where it sorts. Saving makes the row the operator's: a refresh of
    OpenRouter's list no longer replaces it."""

    class Meta:
        model = OfferedModel
        fields = [
            "llm_name",
            "name",
            "offered",
            "position",
            "input_per_million",
            "output_per_million",
            "context_length",
        ]
        labels = {"name": "Label", "input_per_million": "Input price", "output_per_million": "Output price"}
        help_texts = {
            "input_per_million": "USD per million input tokens; with the output price, saved to the price "
            "table (Model prices) for this exact model, which bills its calls",
            "output_per_million": "USD per million output tokens",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["llm_name"].required = True
        if self.instance.pk and not self.instance.llm_name:
            self.initial["llm_name"] = self.instance.persona_name

    def clean_llm_name(self) -> str:
        name = self.cleaned_data["llm_name"].strip()
        if is_default_name(name):
            raise forms.ValidationError(
                f'LLM name "{name}" means DEFAULT_AGENT_LLM: give a model name such as gpt-5-mini, '
                "gemini-2.5-pro or anthropic/claude-sonnet-4.5"
            )
        try:
            route = resolve(name)
        except UnknownModelError as exc:
            raise forms.ValidationError(str(exc)) from None
        clash = OfferedModel.objects.filter(provider=route.provider, model=route.model).exclude(
            pk=self.instance.pk
        )
        if clash.exists():
            raise forms.ValidationError(
                f'LLM name "{name}" is {route.provider}/{route.model}, already listed as '
                f'"{clash.first().persona_name}": edit that row instead'
            )
        self.route = route
        return name

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if (data.get("input_per_million") is None) != (data.get("output_per_million") is None):
            raise forms.ValidationError(
                "Give both the input and the output price (USD per million tokens), or neither"
            )
        return data

    def save(self, commit: bool = True) -> OfferedModel:
        row = super().save(commit=False)
        row.provider, row.model = self.route.provider, self.route.model
        row.source = OfferedModel.Source.OPERATOR
        if commit:
            row.save()
        return row


def save_offered_price(row: OfferedModel) -> ModelPrice | None:
    """The row's prices as the price table's entry for exactly this model (the one that bills it)."""
    if row.input_per_million is None or row.output_per_million is None:
        return None
    price, _ = ModelPrice.objects.update_or_create(
        provider=row.provider,
        model_prefix=row.model[:100],
        defaults={"input_per_million": row.input_per_million, "output_per_million": row.output_per_million},
    )
    return price


class ParameterForm(forms.Form):
    value = forms.CharField(required=False, strip=True, max_length=500)

    def __init__(self, *args: Any, name: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = name
        self.fields["value"].label = name
        self.fields["value"].help_text = PARAMETERS[name].help

    def clean_value(self) -> str:
        raw = self.cleaned_data["value"]
        try:
            parse_value(self.name, raw)
        except ParameterError as exc:
            raise forms.ValidationError(str(exc)) from None
        return raw


class OfferedModelAdmin(admin.ModelAdmin):
    """The changelist is the overview page; the add and change forms edit the models offered to
    personas; `parameters/<NAME>/` edits one global parameter."""

    form = OfferedModelForm

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("llm.add_offeredmodel")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("llm.change_offeredmodel")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.has_perm("llm.delete_offeredmodel")

    def save_model(self, request: HttpRequest, obj: OfferedModel, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        price = save_offered_price(obj)
        if price is not None:
            messages.info(request, f"Price table: {price} bills {obj.persona_name}.")

    def get_urls(self):
        refresh = path(
            "refresh/",
            self.admin_site.admin_view(self.refresh_view),
            name="llm_offeredmodel_refresh",
        )
        parameter_edit = path(
            "parameters/<str:name>/",
            self.admin_site.admin_view(self.parameter_view),
            name="llm_offeredmodel_parameter",
        )
        return [refresh, parameter_edit, *super().get_urls()]

    def changelist_view(self, request: HttpRequest, extra_context: dict | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        if settings.OPENROUTER_API_KEY and openrouter_models_stale():
            openrouter_models_refresh_request()
        context = {
            **self.admin_site.each_context(request),
            "title": "LLMs and prices",
            "opts": self.model._meta,
            "can_edit_parameters": request.user.has_perm("llm.change_siteparameter"),
            "can_add_model": self.has_add_permission(request),
            **llm_overview(
                search=request.GET.get("q", "").strip(),
                agents=agents_for(request.user),
                savings_days=_savings_days(request.GET.get("savings_days", "")),
            ),
        }
        return TemplateResponse(request, "admin/llm/llms.html", context)

    def parameter_view(self, request: HttpRequest, name: str) -> HttpResponse:
        """Edit one global parameter: save an override, or reset it to the environment's value."""
        if not request.user.has_perm("llm.change_siteparameter"):
            raise PermissionDenied
        if name not in PARAMETERS:
            raise Http404(f"{name} is not a global parameter")
        row = next(r for r in effective_parameters() if r["name"] == name)
        by = request.user.get_username()
        if request.method == "POST" and "reset" in request.POST:
            if parameter_reset(name, by=by):
                messages.success(request, f"{name} is the environment's value again: {row['environment']}.")
            return redirect("admin:llm_offeredmodel_changelist")
        if request.method == "POST":
            form = ParameterForm(request.POST, name=name)
            if form.is_valid():
                value = parameter_set(name, form.cleaned_data["value"], by=by)
                messages.success(request, f"{name} is now {value!r}; it applies from the next turn on.")
                return redirect("admin:llm_offeredmodel_changelist")
        else:
            initial = row["stored"].value if row["stored"] is not None else row["environment"]
            form = ParameterForm(initial={"value": initial}, name=name)
        context = {
            **self.admin_site.each_context(request),
            "title": f"Global parameter {name}",
            "opts": self.model._meta,
            "form": form,
            "row": row,
        }
        return TemplateResponse(request, "admin/llm/parameter.html", context)

    def refresh_view(self, request: HttpRequest) -> HttpResponse:
        """Refilling the cached model list is part of viewing it: the view permission suffices."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return redirect("admin:llm_offeredmodel_changelist")
        if not settings.OPENROUTER_API_KEY:
            messages.error(request, "Set OPENROUTER_API_KEY to list OpenRouter's models.")
        else:
            openrouter_models_refresh_request()
            messages.info(request, "Refreshing OpenRouter's model list on the workers; reload in a moment.")
        return redirect("admin:llm_offeredmodel_changelist")


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


class SiteParameterAdmin(ReadOnlyAdmin):
    """The stored overrides, for looking them up; they are set and reset on the LLMs and prices page
    (each change audited there), never edited here."""

    list_display = ["name", "value", "updated", "updated_by", "edit_link"]
    search_fields = ["name", "value", "updated_by"]

    @admin.display(description="Edit")
    def edit_link(self, row: SiteParameter) -> str:
        url = reverse("admin:llm_offeredmodel_parameter", args=[row.name])
        return format_html('<a href="{}">on the LLMs and prices page</a>', url)


def register_llm_admin() -> None:
    admin.site.register(OfferedModel, OfferedModelAdmin)
    admin.site.register(SiteParameter, SiteParameterAdmin)
    admin.site.register(Translation, TranslationAdmin)
