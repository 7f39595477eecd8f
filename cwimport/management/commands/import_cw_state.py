"""`manage.py import_cw_state`: bring a cw-telegram-agent installation's database state and sessions across."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from cwimport.services import cw_state_import
from cwimport.source import SourceError


class Command(BaseCommand):
    help = (
        "Import memories, notes, plans, summaries, intentions, media descriptions, LLM overrides, activity "
        "history and Telegram sessions from a stopped cw-telegram-agent installation. Run importagents first."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--mysql", metavar="URL", help="The original's database: mysql://USER:PASS@HOST/DB"
        )
        parser.add_argument(
            "--state-dir",
            metavar="PATH",
            help="The original's CINDY_AGENT_STATE_DIR (holds <agent>/telegram.session)",
        )
        parser.add_argument("--dry-run", action="store_true", help="Report what would change; write nothing")
        parser.add_argument(
            "--agent", action="append", default=[], metavar="NAME", help="Only this agent (repeatable)"
        )
        parser.add_argument(
            "--source-timezone",
            default="UTC",
            metavar="ZONE",
            help="The original server's time zone (IANA name): the original wrote the local times of agents "
            "without an 'Agent Timezone' in it (default UTC)",
        )
        parser.add_argument(
            "--quiet-seconds",
            type=float,
            default=300.0,
            help="Refuse a session file written less than this many seconds ago (default 300)",
        )

    def handle(self, *args, **options) -> None:
        if not options["mysql"] and not options["state_dir"]:
            raise CommandError("give --mysql URL, --state-dir PATH, or both")
        state_dir = Path(options["state_dir"]) if options["state_dir"] else None
        if state_dir is not None and not state_dir.is_dir():
            raise CommandError(
                f"--state-dir {state_dir}: not a directory (the original's CINDY_AGENT_STATE_DIR)"
            )
        try:
            report = cw_state_import(
                mysql_url=options["mysql"],
                state_dir=state_dir,
                agent_names=options["agent"],
                dry_run=options["dry_run"],
                quiet_seconds=options["quiet_seconds"],
                source_timezone=options["source_timezone"],
                progress=lambda line: self.stderr.write(line),
            )
        except (SourceError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        for line in report.lines():
            self.stdout.write(line)
        refused = [line for line in report.sessions if ": REFUSED " in line or ": ERROR " in line]
        if refused:
            raise CommandError(f"{len(refused)} session(s) not imported; see Sessions above")
