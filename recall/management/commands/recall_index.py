"""`manage.py recall_index [AGENT ...] [--all] [--rebuild]`: index what is already there (recall/build.py)."""

from __future__ import annotations

import signal

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from cindy_site.progress import ProgressPace
from recall.build import BUILD_ORDER, DEFAULT_BATCH, build_batch, build_forget, vectors_batch


class Command(BaseCommand):
    help = (
        "Build the recall index for the agents' existing messages, summaries, memories, notes, plans, "
        "intentions and documents. Resumable: a run that is interrupted (Ctrl-C) or fails goes on "
        "where it stopped when started again; a finished run indexes only rows added since."
    )

    def add_arguments(self, parser):
        parser.add_argument("agents", nargs="*", metavar="AGENT", help="agent names (see --all)")
        parser.add_argument("--all", action="store_true", help="every agent")
        parser.add_argument(
            "--rebuild", action="store_true", help="forget the agents' index and build it from the start"
        )
        parser.add_argument(
            "--batch", type=int, default=DEFAULT_BATCH, help=f"rows per transaction (default {DEFAULT_BATCH})"
        )

    def handle(self, *args, **options):
        agents = self._agents(options["agents"], every=options["all"])
        if not 1 <= options["batch"] <= 10_000:
            raise CommandError(f"--batch {options['batch']}: give 1 to 10000 rows per transaction")
        self.stopping = False
        previous = signal.signal(signal.SIGINT, self._stop)
        try:
            for agent in agents:
                if options["rebuild"]:
                    dropped = build_forget(agent=agent)
                    self.stdout.write(
                        f"{agent.name}: index forgotten ({dropped} entries), building from the start"
                    )
                if not self._build(agent, batch=options["batch"]):
                    self.stdout.write(
                        "interrupted: what was indexed is kept; run the same command again to resume"
                    )
                    return
        finally:
            signal.signal(signal.SIGINT, previous)

    def _agents(self, names: list[str], *, every: bool) -> list[Agent]:
        if every and names:
            raise CommandError("name agents or give --all, not both")
        if every:
            return list(Agent.objects.order_by("pk"))
        if not names:
            raise CommandError("name the agents to index (e.g. recall_index Wendy), or give --all")
        found = {a.name: a for a in Agent.objects.filter(name__in=names)}
        missing = [n for n in names if n not in found]
        if missing:
            known = ", ".join(Agent.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no agent named {', '.join(missing)} (agents: {known})")
        return [found[n] for n in names]

    def _stop(self, signum, frame) -> None:
        """Ctrl-C: finish the batch under way (its transaction commits whole), then stop."""
        self.stopping = True

    def _build(self, agent: Agent, *, batch: int) -> bool:
        """Index every kind of the agent; False when interrupted."""
        totals: dict[str, tuple[int, int]] = {}
        pace = ProgressPace()
        for kind in BUILD_ORDER:
            rows = entries = 0
            while not self.stopping:
                outcome = build_batch(agent=agent, kind=kind, batch=batch)
                if not outcome.rows:
                    break
                rows, entries = rows + outcome.rows, entries + outcome.entries
                if pace.due():
                    self.stdout.write(
                        f"{agent.name}: {kind}: {rows} rows read, {entries} entries written so far"
                    )
            totals[kind] = (rows, entries)
            if self.stopping:
                break
        done = ", ".join(f"{kind} {rows} rows/{entries} entries" for kind, (rows, entries) in totals.items())
        self.stdout.write(f"{agent.name}: {'stopped' if self.stopping else 'indexed'}: {done}")
        vectors = 0
        while not self.stopping and (given := vectors_batch(agent=agent, batch=batch)):
            vectors += given
        if vectors:
            self.stdout.write(f"{agent.name}: vectors given to {vectors} entries that had none")
        return not self.stopping
