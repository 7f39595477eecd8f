"""`manage.py recall AGENT "query" [--conversation ID] [--limit N] [--mode MODE] [--json]`: search an
agent's past."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from agents.models import Agent
from conversations.models import Conversation
from recall.selectors import SEARCH_MODES, RecallQueryError, recall_search


class Command(BaseCommand):
    help = (
        "Search the recall index of an agent, best hits first. With --conversation: as that conversation "
        "recalls (its own history and the agent's global records only)."
    )

    def add_arguments(self, parser):
        parser.add_argument("agent", metavar="AGENT", help="the agent's name")
        parser.add_argument("query", help="words to look for")
        parser.add_argument("--conversation", type=int, metavar="ID", help="a conversation id of the agent")
        parser.add_argument("--limit", type=int, default=10, help="hits to show (default 10)")
        parser.add_argument(
            "--mode",
            choices=SEARCH_MODES,
            help="rank by words and meaning fused (the default with CINDY_RECALL_VECTORS on), "
            "by words only, by meaning only, or by the provider's embeddings only (CINDY_RECALL_EMBEDDINGS)",
        )
        parser.add_argument("--json", action="store_true", help="one JSON object per hit, one a line")

    def handle(self, *args, **options):
        agent = Agent.objects.filter(name=options["agent"]).first()
        if agent is None:
            known = ", ".join(Agent.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no agent named {options['agent']} (agents: {known})")
        conversation = None
        if options["conversation"] is not None:
            conversation = Conversation.objects.filter(agent=agent, pk=options["conversation"]).first()
            if conversation is None:
                raise CommandError(
                    f"--conversation {options['conversation']}: {agent.name} has no such conversation "
                    f"(its conversations are listed in the admin and at /api/v1/agents/{agent.pk}/conversations)"
                )
        try:
            hits = recall_search(
                agent_id=agent.pk,
                query=options["query"],
                conversation=conversation,
                limit=options["limit"],
                mode=options["mode"],
            )
        except RecallQueryError as error:
            option = "--limit" if error.field == "limit" else "the query"
            raise CommandError(f"{option}: {error}") from error
        for hit in hits:
            if options["json"]:
                self.stdout.write(json.dumps(hit.as_json(), ensure_ascii=False))
            else:
                where = f"conversation {hit.conversation_id}" if hit.conversation_id else "global"
                message = f" #{hit.message_id}" if hit.message_id is not None else ""
                text = " ".join(hit.text.split())
                self.stdout.write(
                    f"{hit.score:8.4f}  {hit.date:%Y-%m-%d %H:%M}  {hit.kind}{message} ({where}): {text[:200]}"
                )
        if not hits and not options["json"]:
            self.stdout.write("no hits")
