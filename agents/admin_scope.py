"""Per-agent access in the admin: every ModelAdmin of an agent-scoped model sees only the records of
agents the user may see (`agents.access`).

`CindyAdminSite.register` puts `AgentScopedAdmin` in front of each registered admin class, so no
admin module has to remember it. It narrows:
- the changelist and the change, delete and history pages (`get_queryset`; a record of another agent
  is "not found", as if it did not exist),
- the choices of foreign keys to agent-scoped models in forms (an agent, a conversation),
- the list filters on such foreign keys (only the values present in what the user sees),
- autocomplete (Django's autocomplete view asks the target model's admin for its queryset).
Inlines show rows of the record being edited, which is already visible.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.filters import RelatedOnlyFieldListFilter
from django.contrib.admin.utils import NotRelationField, get_fields_from_path
from django.core.exceptions import FieldDoesNotExist

from agents.access import AGENT_PATHS, OWNER_ONLY, is_owner, visible_to


def _scoped(model) -> bool:
    label = model._meta.label_lower
    return label in AGENT_PATHS or label in OWNER_ONLY


class AgentScopedAdmin:
    def get_queryset(self, request):
        return visible_to(request.user, super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and _scoped(db_field.related_model) and hasattr(field, "queryset"):
            field.queryset = visible_to(request.user, field.queryset)
        return field

    def get_list_filter(self, request):
        filters = list(super().get_list_filter(request))
        if is_owner(request.user):
            return filters
        narrowed = []
        for entry in filters:
            if isinstance(entry, str):
                try:
                    field = get_fields_from_path(self.model, entry)[-1]
                except (FieldDoesNotExist, NotRelationField):
                    field = None
                if field is not None and field.is_relation and _scoped(field.related_model):
                    entry = (entry, RelatedOnlyFieldListFilter)
            narrowed.append(entry)
        return narrowed


def scoped_admin_class(model, admin_class: type[admin.ModelAdmin] | None) -> type[admin.ModelAdmin]:
    """`admin_class` (or ModelAdmin) with `AgentScopedAdmin` in front, for agent-scoped models."""
    admin_class = admin_class or admin.ModelAdmin
    if not _scoped(model) or issubclass(admin_class, AgentScopedAdmin):
        return admin_class
    return type(admin_class.__name__, (AgentScopedAdmin, admin_class), {"__module__": admin_class.__module__})
