"""API tokens in the admin: staff see, create and revoke their own; owners (superusers) revoke anyone's.

A new token is shown once, in the message after saving; only its digest is stored.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from api.models import ApiToken
from api.services.tokens import TokenError, api_token_create, api_token_revoke
from cindy_site.clock import now


def _staff(request) -> bool:
    user = request.user
    return bool(user.is_active and user.is_staff)


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["name", "expires"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "name" in self.fields:
            self.fields["name"].required = True  # a person's list of tokens needs telling apart

    def clean_expires(self):
        expires = self.cleaned_data.get("expires")
        if expires is not None and expires <= now():
            raise ValidationError("This date is in the past: give a future date, or none for no expiry.")
        return expires


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["prefix", "name", "user", "created", "last_used", "expires", "state"]
    list_filter = [("revoked", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    actions = ["revoke_tokens"]

    def get_queryset(self, request):
        queryset = super().get_queryset(request).select_related("user")
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["name", "expires", "prefix", "user", "created", "last_used", "revoked", "revoked_by"]

    # Every staff user manages their own tokens; the queryset keeps them to their own.
    def has_module_permission(self, request) -> bool:
        return _staff(request)

    def has_view_permission(self, request, obj=None) -> bool:
        return _staff(request) and (
            obj is None or request.user.is_superuser or obj.user_id == request.user.pk
        )

    def has_add_permission(self, request) -> bool:
        return _staff(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_revoke_permission(self, request) -> bool:
        return _staff(request)

    @admin.display(description="State")
    def state(self, token: ApiToken) -> str:
        if token.revoked:
            return f"revoked by {token.revoked_by or '?'}"
        return "active"

    def save_model(self, request, obj, form, change):
        try:
            token, raw = api_token_create(
                user=request.user, name=form.cleaned_data["name"], expires=form.cleaned_data["expires"]
            )
        except TokenError as exc:
            raise ValidationError(str(exc)) from None
        for field in ApiToken._meta.concrete_fields:  # the admin logs and links the saved row
            setattr(obj, field.attname, getattr(token, field.attname))
        messages.warning(
            request,
            f"Your new API token (copy it now, it is not shown again): {raw}",
        )

    def response_add(self, request, obj, post_url_continue=None):
        # The standard success message names the row; the token is in the message above.
        return self.response_post_save_add(request, obj)

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke_tokens(self, request, queryset):
        mine = queryset if request.user.is_superuser else queryset.filter(user=request.user)
        for token in mine:
            api_token_revoke(token=token, by=request.user.get_username())
        self.message_user(request, f"{mine.count()} token(s) revoked.", messages.SUCCESS)
