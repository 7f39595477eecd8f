"""Building the index for existing data: `manage.py recall_index`, resumable and safe to interrupt."""

from __future__ import annotations

import datetime as dt
import os
import signal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db.models.signals import post_save

from agents.models import Agent, AgentDocument
from conversations.models import Conversation, Message
from memory.models import Intention, Memory, Note
from recall.build import build_batch
from recall.models import EntryKind, RecallBuild, RecallEntry
from recall.selectors import recall_search
from recall.tests.conftest import ALICE, BOB, START

# Transactional: InnoDB's FULLTEXT index shows a row to searches once its transaction commits.
pytestmark = pytest.mark.django_db(transaction=True)


def _history(agent, peer: int, count: int) -> Conversation:
    """`count` messages loaded with bulk_create, as an import does: no signals, nothing indexed."""
    chat = Conversation.objects.create(agent=agent, peer_id=peer, kind="dm", title=str(peer))
    Message.objects.bulk_create(
        Message(
            conversation=chat,
            message_id=n,
            sender_id=peer,
            date=START + dt.timedelta(minutes=n),
            text=f"message {n} about the harbour" if n % 2 else f"message {n} about the mountain",
        )
        for n in range(1, count + 1)
    )
    return chat


def _run(*args) -> str:
    out = StringIO()
    call_command("recall_index", *args, stdout=out)
    return out.getvalue()


def test_it_indexes_what_bulk_paths_wrote_and_reports_it(wendy):
    chat = _history(wendy, ALICE, 7)
    Memory.objects.bulk_create(
        [Memory(agent=wendy, kind="curated", partner_id=ALICE, content="owns a harbour boat")]
    )
    assert RecallEntry.objects.count() == 0

    report = _run("Wendy")

    assert "Wendy: indexed: message 7 rows/7 entries" in report and "memory 1 rows/1 entries" in report
    hits = recall_search(agent_id=wendy.pk, query="harbour", conversation=chat, limit=20, mode="fulltext")
    assert len(hits) == 5
    assert {h.kind for h in hits} == {"message", "memory"}
    assert [h.conversation_id for h in hits if h.kind == "memory"] == [chat.pk]


def test_a_second_run_indexes_only_what_is_new(wendy):
    _history(wendy, ALICE, 3)
    _run("--all")
    chat = _history(wendy, BOB, 2)

    report = _run("Wendy")

    assert "message 2 rows/2 entries" in report
    assert RecallEntry.objects.filter(kind="message").count() == 5
    assert (
        RecallBuild.objects.get(agent=wendy, kind="message").last_source_id
        == chat.messages.order_by("pk").last().pk
    )


def test_an_interrupted_build_resumes_after_its_last_batch(wendy):
    _history(wendy, ALICE, 10)
    first = build_batch(agent=wendy, kind=EntryKind.MESSAGE, batch=4)
    assert (first.rows, first.entries) == (4, 4)
    assert RecallEntry.objects.count() == 4

    report = _run("Wendy", "--batch", "4")

    assert "message 6 rows/6 entries" in report
    assert RecallEntry.objects.filter(kind="message").count() == 10
    assert RecallBuild.objects.get(agent=wendy, kind="message").indexed == 10


def test_ctrl_c_stops_after_the_batch_under_way_and_keeps_it(wendy):
    _history(wendy, ALICE, 10)

    def interrupt(sender, instance, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # the operator's Ctrl-C, while the first batch commits

    post_save.connect(interrupt, sender=RecallBuild, dispatch_uid="test.interrupt")
    try:
        report = _run("Wendy", "--batch", "3")
    finally:
        post_save.disconnect(dispatch_uid="test.interrupt", sender=RecallBuild)

    assert "Wendy: stopped: message 3 rows/3 entries" in report
    assert "run the same command again to resume" in report
    assert RecallEntry.objects.count() == 3
    assert "message 7 rows/7 entries" in _run("Wendy", "--batch", "3")
    assert RecallEntry.objects.count() == 10


def test_rebuild_starts_over_and_leaves_out_what_recall_does_not_keep(wendy):
    chat = _history(wendy, ALICE, 3)
    _run("Wendy")
    Message.objects.filter(conversation=chat, message_id=1).update(deleted=True)
    Intention.objects.bulk_create(
        [
            Intention(
                agent=wendy, kind="xsend", channel_id=BOB, content="tell Bob the harbour plan", created=START
            )
        ]
    )
    Note.objects.bulk_create([Note(agent=wendy, channel_id=ALICE, content="harbour trip", created=START)])
    AgentDocument.objects.create(
        agent=wendy, name="Places.md", content="# Harbour\nBoats.\n\n# Mountain\nSnow."
    )

    report = _run("Wendy", "--rebuild")

    assert "index forgotten" in report
    assert sorted(RecallEntry.objects.values_list("kind", flat=True)) == [
        "document",
        "document",
        "message",
        "message",
        "note",
    ]


def test_unknown_agents_and_missing_arguments_are_refused_clearly(wendy):
    with pytest.raises(CommandError, match=r"no agent named Nobody \(agents: Wendy\)"):
        _run("Nobody")
    with pytest.raises(CommandError, match="name the agents to index"):
        _run()
    with pytest.raises(CommandError, match="not both"):
        _run("Wendy", "--all")
    with pytest.raises(CommandError, match="--batch 0"):
        _run("Wendy", "--batch", "0")


def test_importagents_indexes_the_curated_memories_it_stores_in_bulk(settings):
    from pathlib import Path

    settings.CINDY_AGENT_CONFIG_PATH = "samples:configdir"
    call_command("importagents", stdout=StringIO(), stderr=StringIO())

    memory_file = next((Path(settings.BASE_DIR) / "samples" / "agents" / "Orla" / "memory").glob("*.json"))
    orla = Agent.objects.get(name="Orla")
    curated = Memory.objects.filter(agent=orla, kind="curated", partner_id=int(memory_file.stem))
    assert curated.exists()
    indexed = RecallEntry.objects.filter(agent=orla, kind="memory", peer_id=int(memory_file.stem))
    assert sorted(indexed.values_list("text", flat=True)) == sorted(curated.values_list("content", flat=True))
