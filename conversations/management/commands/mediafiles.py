"""List (or delete) the media files that nothing uses; see conversations/services/media_files.py."""

from __future__ import annotations

import datetime as dt

from django.core.management.base import BaseCommand, CommandError

from conversations.services.media_files import scanned_folders, unused_media_files, unused_media_files_delete


class Command(BaseCommand):
    help = "List the media files under CINDY_MEDIA_ROOT that no row uses; --delete removes them."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--delete", action="store_true", help="Delete the files listed")
        parser.add_argument(
            "--older-than-hours",
            type=float,
            default=24.0,
            help="Leave files younger than this alone (default 24: a download may still be in flight)",
        )

    def handle(self, *args, delete: bool, older_than_hours: float, **options) -> None:
        if older_than_hours < 0:
            raise CommandError(f"--older-than-hours is {older_than_hours}: give 0 or more hours")
        grace = dt.timedelta(hours=older_than_hours)
        files = unused_media_files(grace=grace)
        for item in files:
            self.stdout.write(f"{item.name}\t{item.size}\t{item.modified:%Y-%m-%d %H:%M}")
        total = sum(item.size for item in files)
        folders = ", ".join(scanned_folders())
        if not delete:
            self.stdout.write(
                f"{len(files)} unused file(s), {total} bytes, in {folders}; --delete removes them"
            )
            return
        deleted = unused_media_files_delete(names=[item.name for item in files], grace=grace)
        self.stdout.write(f"Deleted {len(deleted)} unused file(s), {total} bytes.")
