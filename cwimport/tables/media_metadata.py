"""`media_metadata`: AI descriptions of stickers and media -> media_catalog.MediaDescription.

A curated description in Cindy always wins: such a row is left as it is. Statuses that mean "not
described yet" are not imported, so Cindy describes those media itself.
"""

from __future__ import annotations

from cwimport.base import TableImporter, json_value, upsert
from cwimport.report import Outcome, RowError, SkipRow
from media_catalog.models import MediaDescription, MediaKind

Status = MediaDescription.Status

# The original's statuses and Cindy's. "generated" is the original's word for a described medium.
_STATUS = {
    "generated": Status.OK,
    "ok": Status.OK,
    "timeout": Status.TIMEOUT,
    "error": Status.ERROR,
    "not_understood": Status.NOT_UNDERSTOOD,
    "unsupported": Status.UNSUPPORTED,
    "curated": Status.CURATED,
}


class MediaMetadataImporter(TableImporter):
    table = "media_metadata"
    order_by = "unique_id"
    per_agent = False

    def row_id(self, row) -> str:
        return str(row.get("unique_id"))

    def import_row(self, row, agent) -> Outcome:
        unique_id = row.get("unique_id") or ""
        if not unique_id or len(unique_id) > 128:
            raise RowError(f"unique_id {unique_id!r} is empty or longer than 128 characters")
        raw_status = (row.get("status") or "").strip().lower()
        status = _STATUS.get(raw_status)
        if status is None:
            raise SkipRow(f"with status {raw_status or '(none)'} (not described yet; Cindy describes them)")
        extra = dict(json_value(row.get("metadata")) or {})
        kind = row.get("kind") or MediaKind.OTHER
        if kind not in MediaKind.values:
            extra["kind"] = kind
            kind = MediaKind.OTHER
        for column in ("media_file", "is_emoji_set", "description_retry_count"):
            if row.get(column) not in (None, "", 0):
                extra[column] = bool(row[column]) if column == "is_emoji_set" else row[column]
        last_used = self.server_when(row, "last_used_at")
        if last_used is not None:
            extra["last_used_at"] = last_used.isoformat()
        curated = status == Status.CURATED
        duration = row.get("duration")
        values = {
            "kind": kind,
            "description": row.get("description"),
            "status": status,
            "source": MediaDescription.Source.CURATED if curated else MediaDescription.Source.AI,
            "sticker_set_name": (row.get("sticker_set_name") or "")[:128],
            "sticker_set_title": (row.get("sticker_set_title") or "")[:255],
            "sticker_name": (row.get("sticker_name") or "")[:64],
            "mime": (row.get("mime_type") or "")[:100],
            "duration": float(duration) if duration is not None else None,
            "extra": extra,
        }
        existing = MediaDescription.objects.filter(unique_id=unique_id).first()
        if existing is not None and existing.is_curated:
            # A curated description in Cindy wins; the one an earlier import wrote is the same row again.
            if all(getattr(existing, name) == value for name, value in values.items() if name != "extra"):
                return upsert(MediaDescription, lookup={"unique_id": unique_id}, values={"extra": extra})
            raise SkipRow("already curated in Cindy (curated descriptions win)")
        return upsert(MediaDescription, lookup={"unique_id": unique_id}, values=values)
