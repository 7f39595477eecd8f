"""`manage.py prune [--dry-run]`: delete rows past their retention period now (engine/retention.py)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from engine.retention import cutoffs, prune_counts, retention_run


class Command(BaseCommand):
    help = (
        "Delete activity events, LLM calls (kept as daily totals), sandbox updates and finished task "
        "graphs older than their retention period, in small batches. The task workers do this by "
        "themselves; --dry-run only reports what would go."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run", action="store_true", help="report what would be deleted, delete nothing"
        )

    def handle(self, *args, **options):
        limits = cutoffs()
        if not limits:
            self.stdout.write("every retention period is 0: nothing is ever pruned")
            return
        if options["dry_run"]:
            for kind, count in prune_counts().items():
                self.stdout.write(
                    f"{kind}: {count} row(s) before {limits[kind]:%Y-%m-%d %H:%M} UTC would be deleted"
                )
            return
        report = retention_run()
        self.stdout.write(f"deleted {report.describe()}")
