"""The console's "Unused media files" page: the files under CINDY_MEDIA_ROOT's media folders that no
row names (conversations/services/media_files.py), with their size and age, to download or delete."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotFound, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from conversations.services.media_files import (
    DEFAULT_GRACE,
    media_description_file,
    scanned_folders,
    unused_media_files,
    unused_media_files_delete,
)
from media_catalog.admin import serve_media_file
from media_catalog.models import MediaDescription

VIEW = "media_catalog.view_mediadescription"
DELETE = "media_catalog.delete_mediadescription"


class _StoredFile:
    """What `serve_media_file` needs of a file field: a name and `open`."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __bool__(self) -> bool:
        return bool(self.name)

    def open(self, mode: str = "rb"):
        return (Path(settings.MEDIA_ROOT) / self.name).open(mode)


def unused_files_view(site, request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm(VIEW):
        raise PermissionDenied
    if request.method == "POST":
        if not request.user.has_perm(DELETE):
            raise PermissionDenied
        names = request.POST.getlist("name")
        if not names:
            messages.warning(request, "Tick the files to delete first.")
        else:
            deleted = unused_media_files_delete(names=names)
            kept = len(names) - len(deleted)
            note = f" {kept} file(s) were kept: a row uses them now, or they are gone." if kept else ""
            messages.success(request, f"Deleted {len(deleted)} unused file(s).{note}")
        return HttpResponseRedirect(reverse("admin:media_files_unused"))
    files = unused_media_files()
    context = {
        **site.each_context(request),
        "title": "Unused media files",
        "files": files,
        "total": sum(item.size for item in files),
        "folders": scanned_folders(),
        "grace_hours": int(DEFAULT_GRACE.total_seconds() // 3600),
        "can_delete": request.user.has_perm(DELETE),
    }
    return TemplateResponse(request, "admin/media_catalog/unused_files.html", context)


def unused_file_download(site, request: HttpRequest) -> HttpResponse:
    """One listed file, as a download: only names the page lists (unused and in a media folder)."""
    if not request.user.has_perm(VIEW):
        raise PermissionDenied
    name = request.GET.get("name", "")
    if name not in {item.name for item in unused_media_files()}:
        raise Http404(f"{name!r} is not an unused media file: pick one from the list")
    return serve_media_file(request, _StoredFile(name), "", download=True)


def description_file_download(site, request: HttpRequest, pk: int) -> HttpResponse:
    """A catalog row's media as a download: the catalog's copy, else the copy the gateway downloaded."""
    if not request.user.has_perm(VIEW):
        raise PermissionDenied
    row = MediaDescription.objects.filter(pk=pk).first()
    if row is None:
        raise Http404(f"no media description with id {pk}")
    stored = media_description_file(row)
    if stored is None:
        # Said in words (a bare 404 page would not tell the operator why there is nothing).
        return HttpResponseNotFound(
            f"{row.unique_id}: no copy of this media is stored (it was never downloaded)",
            content_type="text/plain; charset=utf-8",
        )
    path, part = stored
    name = path.relative_to(Path(settings.MEDIA_ROOT)).as_posix()
    return serve_media_file(request, _StoredFile(name), part.mime, download=True)
