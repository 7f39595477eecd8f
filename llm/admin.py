"""Admin for LLM accounting: calls (read-only: they record what happened), the price table people
edit, the Gemini explicit caches in use, and the "LLMs and prices" page (llm/admin_llms.py)."""

from __future__ import annotations

from django.contrib import admin

from cindy_site.admin_utils import ReadOnlyAdmin, change_link, service_form
from llm import admin_endpoints  # noqa: F401  (registers the LLM endpoints' admin)
from llm.admin_llms import register_llm_admin
from llm.models import ExplicitCache, LLMCall, LLMUsageDaily, ModelPrice, RouteBreaker
from llm.prices import model_price_save, model_price_validate


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = [
        "created",
        "agent",
        "conversation_link",
        "purpose",
        "provider",
        "model",
        "input_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "output_tokens",
        "thinking_tokens",
        "cost",
        "latency_ms",
        "status",
        "explicit_cache",
    ]
    list_filter = ["provider", "status", "purpose", "explicit_cache", "agent", "model"]
    search_fields = ["model", "error", "=node_id"]
    list_select_related = ["agent", "conversation__agent"]
    date_hierarchy = "created"

    @admin.display(description="Conversation")
    def conversation_link(self, call: LLMCall) -> str:
        return change_link(call.conversation) if call.conversation_id else "-"


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
