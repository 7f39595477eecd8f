"""Admin for curating media descriptions and browsing sticker sets.

Previews: static images (WebP, PNG, JPEG, GIF) are shown as they are, video stickers play muted in a
loop, and animated TGS stickers (Lottie) are rendered to a still PNG of their first frame (rlottie,
offline; see `media_catalog/previews.py`) beside an "animated sticker" badge with their emoji, which
is all that shows if the file cannot be rendered. Files are served through the admin itself (staff
with OTP only), so previews also work with DEBUG off.
"""

from __future__ import annotations

import mimetypes

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, OuterRef, Subquery
from django.http import FileResponse, Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from cindy_site.admin_utils import ReadOnlyAdmin, change_link, changelist_link, short
from media_catalog.lottie_budget import AnimationTooComplex
from media_catalog.lottie_render import RenderFailed, tgs_frame_png
from media_catalog.models import MediaDescription, Sticker, StickerAccess, StickerSet
from media_catalog.previews import (
    MAX_TGS_BYTES,
    PreviewError,
    PreviewTooLarge,
    notice_png,
    sniff_media,
)
from media_catalog.services.curation import media_description_save, media_descriptions_curate
from media_catalog.services.sticker_sets import sticker_set_request_refresh
from media_catalog.signals import describe_again_requested

IMAGE_TYPES = {"image/webp", "image/png", "image/jpeg", "image/gif"}
VIDEO_TYPES = {"video/webm", "video/mp4"}
#: What Telegram calls an animated sticker; a gzip file sent as a document is not one, is never
#: rendered, and is offered as a download like any other file.
TGS_TYPES = {"application/x-tgsticker", "application/x-tgs"}


def _mime_of(file_field, declared: str) -> str:
    if declared:
        return declared.lower()
    name = getattr(file_field, "name", "") or ""
    if name.lower().endswith(".tgs"):
        return "application/x-tgsticker"
    return (mimetypes.guess_type(name)[0] or "").lower()


def preview_html(*, url: str | None, mime: str, emoji: str = "", size: int = 96) -> str:
    """The preview for one media file; every value is escaped."""
    if url and mime in IMAGE_TYPES:
        return format_html(
            '<img src="{}" alt="{}" loading="lazy" style="max-width:{}px;max-height:{}px">',
            url,
            emoji,
            size,
            size,
        )
    if url and mime in VIDEO_TYPES:
        return format_html(
            '<video src="{}" autoplay muted loop playsinline style="max-width:{}px;max-height:{}px"></video>',
            url,
            size,
            size,
        )
    if mime in TGS_TYPES:
        badge = format_html(
            '<span class="cindy-badge" title="Animated TGS sticker" style="display:inline-block;padding:2px 6px;'
            'border:1px solid #999;border-radius:8px;background:#f4f0ff">animated sticker '
            '<span style="font-size:1.4em">{}</span></span>',
            emoji,
        )
        if not url:
            return badge
        return format_html(
            '<img src="{}?frame=png" alt="{}" loading="lazy" style="max-width:{}px;max-height:{}px"><br>{}',
            url,
            emoji,
            size,
            size,
            badge,
        )
    if not url:
        return mark_safe('<span style="color:#888">no file</span>')
    return format_html('<a href="{}">{}</a>', url, mime or "file")


#: Types served inline, and only when the file's first bytes show that type: images for `<img>`
#: previews, WebM/MP4 for video stickers (`<video>`). Neither kind can run script in a browser.
INLINE_TYPES = IMAGE_TYPES | VIDEO_TYPES
SNIFF_BYTES = 16


def _attachment_name(file_field) -> str:
    name = (getattr(file_field, "name", "") or "file").rsplit("/", 1)[-1]
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "file"


def serve_media_file(request, file_field, declared_mime: str, *, download: bool = False):
    """The file itself, or for `?frame=png` on a TGS sticker its first frame as PNG; with `download`
    (or `?download=1`) always as an attachment named after the stored file.

    The type a sender declared is never what the browser is told: a file is served inline only
    as the image or video type its first bytes show (`INLINE_TYPES`), with `nosniff`; anything
    else is a download (`application/octet-stream`, `attachment`), so an HTML or SVG file that
    claims to be a sticker cannot run in the admin's origin.
    """
    if not file_field:
        raise Http404("no file is stored for this item")
    try:
        handle = file_field.open("rb")
    except FileNotFoundError:
        raise Http404(f"file {file_field.name} is missing from CINDY_MEDIA_ROOT") from None
    mime = _mime_of(file_field, declared_mime)
    if request.GET.get("frame") == "png" and mime in TGS_TYPES:
        with handle:
            data = handle.read(MAX_TGS_BYTES + 1)
        try:
            response = HttpResponse(tgs_frame_png(data), content_type="image/png")
        except (PreviewTooLarge, RenderFailed) as exc:
            # A badge instead of a frame: the page shows why there is no preview.
            notice = (
                "too complex to preview"
                if isinstance(exc, AnimationTooComplex)
                else "could not be rendered"
                if isinstance(exc, RenderFailed)
                else "too large to preview"
            )
            response = HttpResponse(notice_png(notice), content_type="image/png")
            response["X-Cindy-Preview"] = f"refused: {exc}"
        except PreviewError as exc:
            raise Http404(f"{file_field.name}: {exc}") from None
        response["X-Content-Type-Options"] = "nosniff"
        return response
    sniffed = sniff_media(handle.read(SNIFF_BYTES))
    handle.seek(0)
    download = download or request.GET.get("download") == "1"
    if sniffed in INLINE_TYPES and not download:
        response = FileResponse(handle, content_type=sniffed)
    else:
        response = FileResponse(
            handle,
            content_type="application/octet-stream",
            as_attachment=True,
            filename=_attachment_name(file_field),
        )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


class FileViewMixin:
    """Serves a row's `file` (with its `mime`) at `<pk>/file/` through the OTP-protected admin, so
    previews work with DEBUG off and only verified staff see the files. The URL is named
    `<app>_<model>_file`."""

    def get_urls(self):
        meta = self.model._meta
        name = f"{meta.app_label}_{meta.model_name}_file"
        return [
            path("<int:pk>/file/", self.admin_site.admin_view(self.file_view), name=name)
        ] + super().get_urls()

    def file_view(self, request, pk: int):
        if not self.has_view_permission(request):
            raise PermissionDenied
        row = get_object_or_404(self.get_queryset(request), pk=pk)
        return serve_media_file(request, row.file, row.mime)


class StickerSetFilter(admin.SimpleListFilter):
    title = "sticker set"
    parameter_name = "set"

    def lookups(self, request, model_admin):
        names = (
            MediaDescription.objects.exclude(sticker_set_name="")
            .order_by("sticker_set_name")
            .values_list("sticker_set_name", flat=True)
            .distinct()
        )
        return [("-", "(not a sticker)")] + [(name, name) for name in names]

    def queryset(self, request, queryset):
        if self.value() == "-":
            return queryset.filter(sticker_set_name="")
        if self.value():
            return queryset.filter(sticker_set_name=self.value())
        return queryset


@admin.register(MediaDescription)
class MediaDescriptionAdmin(FileViewMixin, admin.ModelAdmin):
    # Set and name, status and source share a column each, so that the editable description gets
    # the room it needs beside the admin's sidebars instead of being cut off at the list's edge.
    list_display = ["preview", "unique_id", "kind", "sticker", "description", "state"]
    list_display_links = ["unique_id"]
    list_editable = ["description"]
    list_filter = [StickerSetFilter, "status", "source", "kind"]
    search_fields = ["unique_id", "sticker_name", "sticker_set_name", "sticker_set_title", "description"]
    list_per_page = 50
    actions = ["mark_curated", "describe_again"]
    readonly_fields = [
        "large_preview",
        "status",
        "source",
        "attempts",
        "origin_dir",
        "source_file",
        "content_hash",
        "created",
        "updated",
    ]
    fieldsets = [
        (None, {"fields": ["large_preview", "description", "status", "source"]}),
        (
            "Media",
            {
                "fields": [
                    "unique_id",
                    "kind",
                    "sticker_set_name",
                    "sticker_set_title",
                    "sticker_name",
                    "mime",
                    "duration",
                    "language",
                    "file",
                ]
            },
        ),
        (
            "Origin",
            {
                "classes": ["collapse"],
                "fields": [
                    "extra",
                    "attempts",
                    "origin_dir",
                    "source_file",
                    "content_hash",
                    "created",
                    "updated",
                ],
            },
        ),
    ]

    def get_changelist_form(self, request, **kwargs):
        kwargs.setdefault("widgets", {"description": forms.Textarea(attrs={"rows": 3, "cols": 48})})
        return super().get_changelist_form(request, **kwargs)

    def _preview(self, description: MediaDescription, size: int) -> str:
        url = (
            reverse("admin:media_catalog_mediadescription_file", args=[description.pk])
            if description.file and description.pk
            else None
        )
        return preview_html(
            url=url,
            mime=_mime_of(description.file, description.mime),
            emoji=description.sticker_name,
            size=size,
        )

    @admin.display(description="Preview")
    def preview(self, description: MediaDescription) -> str:
        return self._preview(description, 96)

    @admin.display(description="Sticker", ordering="sticker_set_name")
    def sticker(self, description: MediaDescription) -> str:
        if not description.sticker_set_name:
            return "-"
        return f"{description.sticker_set_name} · {description.sticker_name or '?'}"

    @admin.display(description="Status", ordering="status")
    def state(self, description: MediaDescription) -> str:
        """The status, then whose text it is: "Curated" once for an operator's own text, "OK · AI
        description", "Timeout · AI description" for the describer's."""
        status = description.get_status_display()
        if description.status == MediaDescription.Status.CURATED:
            return status
        source = "curated text" if description.is_curated else "AI description"
        return f"{status} · {source}"

    @admin.display(description="Preview")
    def large_preview(self, description: MediaDescription) -> str:
        preview = self._preview(description, 320)
        if not description.pk:
            return preview
        # The catalog's copy, else the one the gateway downloaded (found by the conversations app).
        url = reverse("admin:media_files_description", args=[description.pk])
        return format_html('{}<br><a href="{}" class="cindy-download">Download the file</a>', preview, url)

    def save_model(self, request, obj, form, change):
        # Covers the change form and the changelist's editable description column alike.
        media_description_save(
            description=obj, text_changed=(not change) or "description" in form.changed_data
        )

    @admin.action(
        description="Mark the selected descriptions as curated (keep their text)", permissions=["change"]
    )
    def mark_curated(self, request, queryset):
        count = media_descriptions_curate(ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} description(s) marked curated.", messages.SUCCESS)

    @admin.action(
        description="Describe the selected media again with the media model (AI descriptions only)",
        permissions=["change"],
    )
    def describe_again(self, request, queryset):
        ids = list(queryset.exclude(source=MediaDescription.Source.CURATED).values_list("pk", flat=True))
        curated = queryset.count() - len(ids)
        if ids:
            describe_again_requested.send(sender=MediaDescription, ids=ids)
        note = f" {curated} curated description(s) are left as they are." if curated else ""
        self.message_user(
            request,
            f"{len(ids)} item(s) will be described again by the task workers; the activity stream says "
            f"when they are done.{note}",
            messages.SUCCESS if ids else messages.WARNING,
        )


class StickerInline(admin.TabularInline):
    model = Sticker
    extra = 0
    fields = ["position", "name", "format", "premium", "unique_id", "mime"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(StickerSet)
class StickerSetAdmin(admin.ModelAdmin):
    list_display = [
        "short_name",
        "title",
        "is_animated",
        "is_video",
        "sticker_count",
        "descriptions",
        "fetched_at",
    ]
    list_filter = ["is_animated", "is_video"]
    search_fields = ["short_name", "title"]
    readonly_fields = ["telegram_set_id", "access_hash", "fetched_at"]
    inlines = [StickerInline]
    actions = ["refresh_from_telegram"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(sticker_total=Count("stickers"))

    @admin.action(description="Refresh from Telegram", permissions=["change"])
    def refresh_from_telegram(self, request, queryset) -> None:
        queued, stuck = [], []
        for sticker_set in queryset:
            target = queued if sticker_set_request_refresh(short_name=sticker_set.short_name) else stuck
            target.append(sticker_set.short_name)
        if queued:
            self.message_user(
                request,
                f"Asked the gateway to fetch {', '.join(queued)} again; see Gateway requests for the result.",
                messages.SUCCESS,
            )
        if stuck:
            self.message_user(
                request,
                f"Could not refresh {', '.join(stuck)}: no enabled, running Telegram agent to fetch it with. "
                "Enable one under Agents and try again.",
                messages.ERROR,
            )

    @admin.display(description="Stickers", ordering="sticker_total")
    def sticker_count(self, sticker_set: StickerSet) -> int:
        return sticker_set.sticker_total

    @admin.display(description="Descriptions")
    def descriptions(self, sticker_set: StickerSet) -> str:
        return changelist_link("media_catalog.mediadescription", "descriptions", set=sticker_set.short_name)


@admin.register(Sticker)
class StickerAdmin(FileViewMixin, admin.ModelAdmin):
    list_display = [
        "preview",
        "name",
        "set_link",
        "format",
        "premium",
        "unique_id",
        "description_link",
        "position",
    ]
    list_display_links = ["name"]
    list_filter = ["format", "sticker_set"]
    search_fields = ["name", "unique_id", "sticker_set__short_name"]
    list_select_related = ["sticker_set"]
    readonly_fields = ["document_id", "access_hash", "unique_id", "description_link"]

    def get_queryset(self, request):
        # The description column reads these instead of one query per row.
        described = MediaDescription.objects.filter(unique_id=OuterRef("unique_id"))
        return (
            super()
            .get_queryset(request)
            .annotate(
                description_pk=Subquery(described.values("pk")[:1]),
                description_text=Subquery(described.values("description")[:1]),
                description_status=Subquery(described.values("status")[:1]),
                description_file=Subquery(described.values("file")[:1]),
                description_mime=Subquery(described.values("mime")[:1]),
            )
        )

    @admin.display(description="Preview")
    def preview(self, sticker: Sticker) -> str:
        """The sticker's own file, or else the file its description has (a curated description
        ships with its picture; a set seen only through the sandbox has no files of its own)."""
        if sticker.file:
            url = reverse("admin:media_catalog_sticker_file", args=[sticker.pk])
            mime = _mime_of(sticker.file, sticker.mime)
        elif getattr(sticker, "description_file", None):
            url = reverse("admin:media_catalog_mediadescription_file", args=[sticker.description_pk])
            mime = (
                sticker.description_mime or mimetypes.guess_type(sticker.description_file)[0] or ""
            ).lower()
        else:
            url, mime = None, _mime_of(sticker.file, sticker.mime)
        if not mime and sticker.format == Sticker.Format.ANIMATED:
            mime = "application/x-tgsticker"
        return preview_html(url=url, mime=mime, emoji=sticker.name, size=72)

    @admin.display(description="Set", ordering="sticker_set__short_name")
    def set_link(self, sticker: Sticker) -> str:
        return change_link(sticker.sticker_set)

    @admin.display(description="Description")
    def description_link(self, sticker: Sticker) -> str:
        pk = getattr(sticker, "description_pk", None)
        if pk is None:
            return "(not described yet)"
        url = reverse("admin:media_catalog_mediadescription_change", args=[pk])
        label = short(sticker.description_text or sticker.description_status, 60)
        return format_html('<a href="{}">{}</a>', url, label)


@admin.register(StickerAccess)
class StickerAccessAdmin(ReadOnlyAdmin):
    """What each Telegram account may send beyond its sets, as its gateway last saw it."""

    list_display = ["agent", "premium", "saved_count", "updated"]
    list_filter = ["premium"]
    list_select_related = ["agent"]

    @admin.display(description="Saved Messages stickers")
    def saved_count(self, access: StickerAccess) -> int:
        return len(access.saved_stickers or [])
