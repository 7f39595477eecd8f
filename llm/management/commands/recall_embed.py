"""`manage.py recall_embed [--runs N] [--queue]`: make the recall entries' provider vectors now.

The worker job (`llm.embeddings.recall_embeddings_fill_task`) makes them as searches ask for them; this
runs the same fill in the foreground, run after run, until every entry has a vector of the model that
CINDY_RECALL_EMBEDDINGS names (or N runs), each run's line printed; `--queue` queues one run of the
job on the workers instead. Each call is an LLM call, costed as the others (docs/recall.md).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from llm.embeddings import recall_embeddings_fill, recall_embeddings_fill_request
from recall.provider_vectors import embeddings_model


class Command(BaseCommand):
    help = "Embed the recall entries with the provider model of CINDY_RECALL_EMBEDDINGS (paid calls)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--runs", type=int, default=0, metavar="N", help="stop after N runs (0: until done)"
        )
        parser.add_argument("--queue", action="store_true", help="queue one run on the workers instead")

    def handle(self, *args, **options):
        if not embeddings_model():
            raise CommandError(
                "CINDY_RECALL_EMBEDDINGS is not set: set it to an embedding model "
                "(gemini-embedding-001, text-embedding-3-small) to give recall entries provider vectors"
            )
        if options["queue"]:
            recall_embeddings_fill_request()
            self.stdout.write(f"queued a run of the {embeddings_model()} fill on the workers")
            return
        runs = 0
        while True:
            outcome = recall_embeddings_fill()
            runs += 1
            self.stdout.write(outcome.summary())
            if outcome.error or outcome.busy:
                raise CommandError(
                    outcome.error or "another run is under way: try again when it has finished"
                )
            if not outcome.more or runs == options["runs"]:
                return
