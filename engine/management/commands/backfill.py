"""`manage.py backfill AGENT [--chat PEER_ID ...] (--days N | --all)`: fetch a Telegram agent's older
history into the mirror, through the gateway that runs it (engine/backfill.py)."""

from __future__ import annotations

import datetime as dt
import signal

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from cindy_site.clock import now
from engine.backfill import (
    Backfill,
    BackfillError,
    backfill_chats,
    backfill_check,
    gateway_wait,
    interruptible_sleep,
)

#: The most days `--days` takes (about 30 years; `--all` is the same without the bound).
MAX_DAYS = 11_000


class Command(BaseCommand):
    help = (
        "Fetch a Telegram agent's older history into the mirror, so that recall finds it: every chat in "
        "its mirror (or the --chat ones), newest first, back N days or to each chat's beginning. The "
        "gateway running the agent does the fetching. Resumable: Ctrl-C finishes the page under way; "
        "the same command started again goes on where it stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent", metavar="AGENT", help="the agent's name")
        parser.add_argument(
            "--chat",
            type=int,
            action="append",
            metavar="PEER_ID",
            help="a Telegram chat id of one of the agent's conversations (repeatable; default: every chat)",
        )
        when = parser.add_mutually_exclusive_group()
        when.add_argument("--days", type=int, metavar="N", help="fetch at least the last N days of each chat")
        when.add_argument("--all", action="store_true", help="fetch each chat back to its first message")

    def handle(self, *args, **options):
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            known = ", ".join(Agent.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no agent named {options['agent']!r} (agents: {known})")
        days = options["days"]
        if days is None and not options["all"]:
            raise CommandError(
                "say how far back: --days N (the last N days) or --all (every chat's beginning)"
            )
        if days is not None and not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--days {days}: give 1 to {MAX_DAYS} days, or --all")
        since = now() - dt.timedelta(days=days) if days is not None else None
        try:
            backfill_check(agent)
            chats = backfill_chats(agent, options["chat"])
        except BackfillError as exc:
            raise CommandError(str(exc)) from exc
        reach = f"the last {days} days" if days is not None else "each chat's beginning"
        self.stdout.write(
            f"{agent.name}: backfilling {len(chats)} chat{'s' if len(chats) != 1 else ''} to {reach}"
        )
        self.stopping = False
        previous = signal.signal(signal.SIGINT, self._stop)
        try:
            stopping = lambda: self.stopping  # noqa: E731
            backfill = Backfill(
                agent=agent,
                since=since,
                out=self.stdout.write,
                wait=lambda request_id: gateway_wait(request_id, stopping=stopping),
                pause=interruptible_sleep(stopping),
                stopping=stopping,
            )
            try:
                backfill.run(chats)
            except BackfillError as exc:
                self._summary(agent, backfill.outcomes, total=len(chats))
                raise CommandError(str(exc)) from exc
        finally:
            signal.signal(signal.SIGINT, previous)
        self._summary(agent, backfill.outcomes, total=len(chats))

    def _stop(self, signum, frame) -> None:
        """Ctrl-C: let the page under way finish (the gateway stores it with its mark), then stop."""
        self.stopping = True

    def _summary(self, agent: Agent, outcomes, *, total: int) -> None:
        counts: dict[str, int] = {}
        for outcome in outcomes:
            counts[outcome.state] = counts.get(outcome.state, 0) + 1
        fetched = sum(o.fetched for o in outcomes)
        parts = ", ".join(f"{state} {n}" for state, n in sorted(counts.items()))
        self.stdout.write(
            f"{agent.name}: {fetched} messages fetched from {len(outcomes)} of {total} chats ({parts or 'none'})"
        )
        if self.stopping or len(outcomes) < total or counts.get("interrupted"):
            self.stdout.write("interrupted: what was fetched is kept; run the same command again to resume")
        failed = [o for o in outcomes if o.state == "failed"]
        if failed and len(outcomes) == total:
            raise CommandError(
                f"{len(failed)} chat(s) failed: "
                + "; ".join(f"{o.peer_id}: {o.error}" for o in failed)
                + ". Run the same command again to retry them"
            )
