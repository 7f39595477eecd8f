"""`manage.py importagents [DIR ...]`: import config directories in the original formats."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from cwimport.configdir.import_report import plural
from cwimport.configdir.importing import config_import, configured_dirs
from memory.services.state_io import StateFileError, state_import_all
from recall.build import build_kind
from recall.models import EntryKind

# Below this many media files a progress line is more noise than help.
PROGRESS_THRESHOLD = 20


class Command(BaseCommand):
    help = (
        "Import personas, role prompts, curated memories and curated media descriptions from config "
        "directories (default: CINDY_AGENT_CONFIG_PATH). Earlier directories win. Unchanged files are skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("dirs", nargs="*", help="Config directories, highest priority first")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change, save nothing")
        parser.add_argument(
            "--state",
            metavar="STATE_DIR",
            help="Also import the original's state files (<agent>/memory.json, <agent>/memory/<channel>.json): "
            "global memories, intentions, plans, notes and summaries, by id",
        )

    def handle(self, *args, dirs, dry_run, state=None, **options):
        report = config_import(dirs=configured_dirs(dirs), dry_run=dry_run, progress=self._progress)
        rows = [(r.path, r.kind.value, r.outcome.value, _detail(r)) for r in report.results]
        self._table(rows)
        for warning in report.warnings:
            self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        summary = report.summary()
        if report.errors:
            for result in report.errors:
                self.stderr.write(self.style.ERROR(f"error: {result.detail}"))
            raise CommandError(f"{summary}. Fix the files above and run importagents again.")
        self.stdout.write(self.style.SUCCESS(summary))
        if not dry_run:
            # Curated memory files are stored with `bulk_create`, which recall's receivers do not see.
            for agent in Agent.objects.order_by("pk"):
                build_kind(agent=agent, kind=EntryKind.MEMORY)
        if state and not dry_run:
            try:
                counts = state_import_all(state_dir=Path(state))
            except StateFileError as exc:
                raise CommandError(f"{exc}. Fix it and run importagents --state again.") from exc
            parts = ", ".join(f"{counts[kind]} {kind}" for kind in sorted(counts)) or "no entries"
            self.stdout.write(self.style.SUCCESS(f"State from {state}: {parts}"))

    def _progress(self, done: int, total: int) -> None:
        if total < PROGRESS_THRESHOLD:
            return
        end = "\n" if done == total else ""
        self.stderr.write(f"\rmedia {done}/{total} ({done * 100 // total}%)", ending=end)
        self.stderr.flush()

    def _table(self, rows: list[tuple[str, str, str, str]]) -> None:
        if not rows:
            self.stdout.write("No files found.")
            return
        header = ("FILE", "KIND", "RESULT", "DETAIL")
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(3)]
        for row in [header, *rows]:
            cells = [row[i].ljust(widths[i]) for i in range(3)]
            self.stdout.write("  ".join([*cells, row[3]]).rstrip())


def _detail(result) -> str:
    if result.outcome == "error":
        return "see below"
    note = f" ({plural(len(result.warnings), 'warning')}, see below)" if result.warnings else ""
    return f"{result.detail}{note}"
