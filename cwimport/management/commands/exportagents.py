"""`manage.py exportagents DIR`: write the database back out as a config directory."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cwimport.configdir.exporting import ExportError, config_export


class Command(BaseCommand):
    help = (
        "Write agents, role prompts, curated memories and curated media (with files) into DIR, in the "
        "layout importagents reads, and the agents' global memories, plans, notes, intentions and "
        "summaries into DIR/state (importagents --state DIR/state). Files with the same names are overwritten."
    )

    def add_arguments(self, parser):
        parser.add_argument("dir", help="Output config directory (created if missing)")

    def handle(self, *args, dir, **options):
        out_dir = Path(dir)
        if out_dir.exists() and not out_dir.is_dir():
            raise CommandError(f"{dir} exists and is not a directory: choose another path")
        try:
            counts = config_export(out_dir=out_dir)
        except ExportError as exc:
            raise CommandError(str(exc)) from exc
        parts = ", ".join(
            f"{counts[kind]} {kind}"
            for kind in ("persona", "prompt", "agent prompt", "memory", "media", "state")
        )
        self.stdout.write(self.style.SUCCESS(f"Exported to {out_dir}: {parts} files"))
