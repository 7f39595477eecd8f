"""Small building blocks shared by every app's admin: links between objects and read-only admins."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.formsets import DELETION_FIELD_NAME
from django.forms.models import BaseInlineFormSet
from django.forms.utils import pretty_name
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


def change_link(obj: models.Model | None, label: object | None = None) -> str:
    """An HTML link to `obj`'s admin page, or "-" when there is none."""
    if obj is None:
        return "-"
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, label if label is not None else str(obj))


def changelist_link(model_label: str, label: object, **filters: object) -> str:
    """A link to a changelist ("app.model") filtered by lookups, e.g. agent__id__exact=3."""
    app_label, model_name = model_label.lower().split(".")
    url = reverse(f"admin:{app_label}_{model_name}_changelist")
    if filters:
        url += "?" + urlencode(filters)
    return format_html('<a href="{}">{}</a>', url, label)


def html_row(parts: list[str], separator: str = " · ") -> SafeString:
    """Safe HTML pieces (links, badges) joined by a separator, still marked safe as a whole."""
    return format_html_join(separator, "{}", ((part,) for part in parts))


def short(text: str | None, length: int = 80) -> str:
    text = (text or "").replace("\n", " ")
    return text if len(text) <= length else text[: length - 1] + "…"


class ReadOnlyAdmin(admin.ModelAdmin):
    """For rows that record what happened (activity, LLM calls, leases): they are looked at, never edited."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_operate_permission(self, request) -> bool:
        """For actions that act on the rows (cancelling work): the model's change permission, though
        no form edits them."""
        meta = self.model._meta
        return request.user.has_perm(f"{meta.app_label}.change_{meta.model_name}")


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class LabelledInlineFormSet(BaseInlineFormSet):
    """A tabular inline shows each field's name once, as its column's heading, which assistive
    technology does not read out with the field: every field (the Delete box too) gets an
    `aria-label` naming it and its row, such as "Content, memory 2" or "Kind, new memory"."""

    def add_fields(self, form, index) -> None:
        super().add_fields(form, index)
        noun = self.model._meta.verbose_name
        row = f"new {noun}" if index is None else f"{noun} {index + 1}"  # None: the template row
        for name, field in form.fields.items():
            label = "Delete" if name == DELETION_FIELD_NAME else field.label or pretty_name(name)
            field.widget.attrs.setdefault("aria-label", f"{label}, {row}")


class LabelledTabularInline(admin.TabularInline):
    """A tabular inline whose fields are labelled for screen readers (`LabelledInlineFormSet`)."""

    formset = LabelledInlineFormSet


def service_form(validator: Callable[[models.Model], None]) -> type[forms.ModelForm]:
    """A ModelForm base that runs a service's validator, so its errors show on the form's fields."""

    class ServiceValidatedForm(forms.ModelForm):
        def _post_clean(self) -> None:
            super()._post_clean()
            try:
                validator(self.instance)
            except ValidationError as exc:
                self._update_errors(exc)

    return ServiceValidatedForm
