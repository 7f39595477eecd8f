"""`manage.py importchat AGENT EXPORT.json [--me USER_ID] [--chat ID_OR_NAME]`: bring a chat's past
from a Telegram Desktop export into the agent's conversation (docs/importing.md)."""

from __future__ import annotations

import datetime as dt
import signal
import zoneinfo
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from cindy_site.clock import get_clock
from cindy_site.progress import ProgressPace
from cwimport.chatexport.chats import export_chats
from cwimport.chatexport.importing import DEFAULT_BATCH, ChatImport
from cwimport.chatexport.reading import ChatExportError, read_export

BAR_WIDTH = 30


class Command(BaseCommand):
    help = (
        "Import a chat's history from Telegram Desktop's JSON export (result.json) into the agent's "
        "conversation with that chat. Safe to run again: messages already there are left alone, so an "
        "interrupted import (Ctrl-C) resumes and a finished one adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent", metavar="AGENT", help="the agent's name")
        parser.add_argument("export", metavar="EXPORT.json", help="the export's result.json")
        parser.add_argument(
            "--me",
            metavar="USER_ID",
            help="the Telegram user id (123 or user123) whose messages are the agent's own "
            "(default: the agent's Telegram account, else the account that made a full export)",
        )
        parser.add_argument(
            "--chat",
            metavar="ID_OR_NAME",
            help="in a full export, the chat to import (default: every personal chat)",
        )
        parser.add_argument(
            "--name",
            metavar="NAME",
            help="sandbox agents: the sandbox person or group (default: the chat's name)",
        )
        parser.add_argument(
            "--timezone",
            metavar="ZONE",
            help="the zone of the export's dates when it has no date_unixtime (default: the agent's zone)",
        )
        parser.add_argument(
            "--batch",
            type=int,
            default=DEFAULT_BATCH,
            help=f"messages per transaction (default {DEFAULT_BATCH})",
        )

    def handle(self, *args, **options):
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            known = ", ".join(Agent.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no agent named {options['agent']!r} (agents: {known})")
        if not 1 <= options["batch"] <= 10_000:
            raise CommandError(f"--batch {options['batch']}: give 1 to 10000 messages per transaction")
        me = _user_id(options["me"])
        zone = _zone(
            options["timezone"] or agent.timezone or settings.TIME_ZONE, given=bool(options["timezone"])
        )
        path = Path(options["export"])
        try:
            export = export_chats(path, read_export(path), choose=options["chat"], zone=zone)
            run = ChatImport(
                agent=agent,
                export=export,
                me=me,
                name=options["name"],
                batch=options["batch"],
                progress=self._progress,
            )
        except ChatExportError as exc:
            raise CommandError(str(exc)) from exc
        names = ", ".join(chat.where for chat in export.chats)
        self.stdout.write(f"{agent.name}: importing {run.total} messages of {names}")
        self.terminal = self.stdout.isatty()
        self.pace = ProgressPace(monotonic=get_clock().monotonic)
        previous = signal.signal(signal.SIGINT, lambda signum, frame: run.stop())
        try:
            summary = run.run()
        except ChatExportError as exc:
            raise CommandError(str(exc)) from exc
        finally:
            signal.signal(signal.SIGINT, previous)
        if self.terminal:
            self.stdout.write("")
        ids = ", ".join(str(c.pk) for c in summary.conversations)
        self.stdout.write(f"{agent.name}: {summary.line()} (conversation {ids})")
        if summary.stopped:
            self.stdout.write("interrupted: what was imported is kept; run the same command again to resume")

    def _progress(self, done: int, total: int) -> None:
        if self.terminal:
            filled = BAR_WIDTH * done // max(total, 1)
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            self.stdout.write(f"\r[{bar}] {done:,}/{total:,} messages", ending="")
            self.stdout.flush()
            return
        if self.pace.due() or done == total:
            self.stdout.write(f"{done:,}/{total:,} messages read")


def _user_id(value: str | None) -> int | None:
    if value is None:
        return None
    digits = value.removeprefix("user")
    if not (digits.isascii() and digits.isdigit()) or not 0 < int(digits[:20]) < 2**52:
        raise CommandError(
            f"--me {value!r}: give a Telegram user id, e.g. --me 123456789 or --me user123456789"
        )
    return int(digits)


def _zone(name: str, *, given: bool) -> dt.tzinfo:
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        if given:
            raise CommandError(
                f"--timezone {name!r}: not an IANA zone; give one such as Europe/Paris"
            ) from None
        return dt.UTC
