"""`{% media_save_form part message_id %}`: a media part's "Save to library" form on a conversation page.

The page's view passes `save_options` (conversations.services.media_save.media_save_options); a part
that cannot be saved, or a user without the permission, gets no form."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.inclusion_tag("dashboard/_media_save.html", takes_context=True)
def media_save_form(context, part: dict[str, Any], message_id: int) -> dict[str, Any]:
    request = context.get("request")
    options = (context.get("save_options") or {}).get(str(part.get("unique_id", "")))
    allowed = request is not None and request.user.has_perm("media_catalog.add_libraryitem")
    return {
        "show": bool(options) and allowed,
        "options": options or {},
        "unique_id": part.get("unique_id", ""),
        "message_id": message_id,
        "conversation": context.get("conversation"),
        "next": request.get_full_path() if request is not None else "",
        "csrf_token": context.get("csrf_token"),
    }
