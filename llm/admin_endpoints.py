"""The admin's table of OpenAI-compatible endpoints (`LLMEndpoint`): `NAME:MODEL` routes there.

The API key is a password field that never renders the stored value (left empty, the key is kept;
"Remove the API key" clears it), and the list only says whether one is set. A name that
CINDY_LLM_ENDPOINTS uses too is served by the setting: the list, the change page and the save
message say so.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction

from cindy_site.llm_endpoints import configured_endpoints
from llm.endpoint_store import endpoints_refresh
from llm.models import LLMEndpoint


class LLMEndpointForm(forms.ModelForm):
    api_key = forms.CharField(
        label="API key",
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Optional (a self-hosted server usually needs none). Left empty, the stored key is kept.",
    )
    clear_api_key = forms.BooleanField(label="Remove the API key", required=False)

    class Meta:
        model = LLMEndpoint
        fields = ["name", "base_url", "api_key", "clear_api_key", "enabled", "structured"]

    def clean_name(self) -> str:
        return (self.cleaned_data.get("name") or "").strip()

    def clean_base_url(self) -> str:
        return (self.cleaned_data.get("base_url") or "").strip()

    def _post_clean(self) -> None:
        # The stored key stays unless a new one is typed or removal is asked for.
        typed = self.cleaned_data.get("api_key", "")
        stored = self.instance.api_key if self.instance.pk else ""
        super()._post_clean()
        if self.cleaned_data.get("clear_api_key"):
            self.instance.api_key = ""
        elif not typed:
            self.instance.api_key = stored


def _setting_note(name: str) -> str:
    url = configured_endpoints().get(name)
    if url is None:
        return ""
    return f"CINDY_LLM_ENDPOINTS also names {name} ({url.base_url}): the setting is used, not this row"


@admin.register(LLMEndpoint)
class LLMEndpointAdmin(admin.ModelAdmin):
    form = LLMEndpointForm
    list_display = ["name", "base_url", "enabled", "structured", "key_set", "in_effect"]
    list_filter = ["enabled"]
    search_fields = ["name", "base_url"]
    readonly_fields = ["in_effect"]

    @admin.display(description="API key")
    def key_set(self, endpoint: LLMEndpoint) -> str:
        return "set (hidden)" if endpoint.api_key else "—"

    @admin.display(description="In effect")
    def in_effect(self, endpoint: LLMEndpoint) -> str:
        if not endpoint.pk:
            return "—"
        note = _setting_note(endpoint.name)
        if note:
            return f"No: {note}"
        return "Yes" if endpoint.enabled else "No: disabled"

    def save_model(self, request, obj, form, change) -> None:
        super().save_model(request, obj, form, change)
        transaction.on_commit(endpoints_refresh)  # this process routes with the row from now on
        note = _setting_note(obj.name)
        if note:
            messages.warning(request, note)

    def delete_model(self, request, obj) -> None:
        super().delete_model(request, obj)
        transaction.on_commit(endpoints_refresh)

    def delete_queryset(self, request, queryset) -> None:
        super().delete_queryset(request, queryset)
        transaction.on_commit(endpoints_refresh)
