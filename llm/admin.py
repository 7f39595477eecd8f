"""Admin for LLM accounting: calls (read-only: they record what happened), the price table people
edit, the Gemini explicit caches in use, and the "LLMs and prices" page (llm/admin_llms.py)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.dateformat import format as date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.timezone import localtime

from cindy_site.admin_utils import ReadOnlyAdmin, change_link, service_form
from llm import admin_endpoints  # noqa: F401  (registers the LLM endpoints' admin)
from llm.admin_llms import register_llm_admin
from llm.models import ExplicitCache, LLMCall, LLMUsageDaily, ModelPrice, RouteBreaker
from llm.prices import model_price_save, model_price_validate

#: The token counts of a call, as the list names them (only those above zero are shown).
TOKEN_COUNTS = [
    ("input_tokens", "in"),
    ("cached_tokens", "cached"),
    ("cache_write_tokens", "cache write"),
    ("output_tokens", "out"),
    ("thinking_tokens", "thinking"),
]


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    # Fifteen columns made the list 1,500 px wide at a 1280 px window, with cost, latency and status
    # behind its scrollbar: the provider and model share a column, and so do the token counts.
    list_display = [
        "when",
        "agent",
        "conversation_link",
        "purpose",
        "model_shown",
        "tokens",
        "cost",
        "latency_ms",
        "status",
        "explicit_cache",
    ]
    list_filter = ["provider", "status", "purpose", "explicit_cache", "agent", "model"]
    search_fields = ["model", "error", "=node_id"]
    list_select_related = ["agent", "conversation__agent"]
    date_hierarchy = "created"

    @admin.display(description="When", ordering="created")
    def when(self, call: LLMCall) -> str:
        return date_format(localtime(call.created), "Y-m-d H:i:s")

    @admin.display(description="Conversation")
    def conversation_link(self, call: LLMCall) -> str:
        return change_link(call.conversation) if call.conversation_id else "-"

    @admin.display(description="Model", ordering="model")
    def model_shown(self, call: LLMCall) -> str:
        return format_html('{}<br><span class="quiet">{}</span>', call.model, call.provider)

    @admin.display(description="Tokens", ordering="input_tokens")
    def tokens(self, call: LLMCall) -> str:
        counts = [(label, getattr(call, field)) for field, label in TOKEN_COUNTS if getattr(call, field)]
        if not counts:
            return "-"
        return format_html_join(mark_safe("<br>"), "{} {}", ((f"{n:,}", label) for label, n in counts))


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    form = service_form(lambda obj: model_price_validate(price=obj))
    list_display = [
        "provider",
        "model_prefix",
        "input_per_million",
        "cached_input_per_million",
        "output_per_million",
        "audio_input_per_million",
        "audio_per_minute",
        "image_output_per_million",
        "cache_storage_per_million_hour",
        "cache_write_per_million",
    ]
    list_editable = [
        "input_per_million",
        "cached_input_per_million",
        "output_per_million",
        "image_output_per_million",
    ]
    list_filter = ["provider"]
    search_fields = ["model_prefix"]

    def save_model(self, request, obj, form, change):
        model_price_save(price=obj)


@admin.register(ExplicitCache)
class ExplicitCacheAdmin(ReadOnlyAdmin):
    """The Gemini explicit caches in use (llm/explicit_cache.py); they go when they expire."""

    list_display = ["name", "conversation", "model", "prefix_turns", "tokens", "created", "expires_at"]
    list_select_related = ["conversation__agent"]


@admin.register(LLMUsageDaily)
class LLMUsageDailyAdmin(ReadOnlyAdmin):
    """The daily totals that older LLM calls are folded into (engine/retention.py): read-only."""

    list_display = ["day", "agent", "provider", "model", "calls", "cost"]
    list_filter = ["provider", "day"]
    list_select_related = ["agent"]
    date_hierarchy = "day"


@admin.register(RouteBreaker)
class RouteBreakerAdmin(ReadOnlyAdmin):
    """Each LLM route's circuit breaker (llm/breakers.py): kept by the workers' calls, read-only."""

    list_display = ["provider", "model", "state", "failures", "open_until", "changed"]
    list_filter = ["state", "provider"]


register_llm_admin()
