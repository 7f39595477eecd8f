"""import_cw_state on the original's tables: what lands where, field by field, and that a second run
changes nothing."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.management import call_command

from agents.models import Agent
from conversations.models import ActivityEvent, Conversation
from cwimport.services import cw_state_import
from cwimport.tests.sessions import write_session
from media_catalog.models import MediaDescription
from memory.models import Intention, Memory, Note, Plan, ScheduledEvent, ScheduleEntry, Summary

pytestmark = pytest.mark.django_db

WENDY, HEIDI, STRANGER = 1001, 1002, 9999
UTC = dt.UTC


@pytest.fixture
def agents(db):
    wendy = Agent.objects.create(
        name="Wendy", config_name="Wendy", phone="+15550000001", instructions="x", telegram_user_id=WENDY
    )
    heidi = Agent.objects.create(
        name="Heidi", config_name="Heidi", phone="+1 (555) 000-0002", instructions="x"
    )
    return wendy, heidi


def fill(src) -> None:
    src.execute("ALTER TABLE memories ADD COLUMN metadata JSON")  # an older installation's column
    src.insert(
        "memories", id="memory-0001", agent_telegram_id=WENDY, content="Zoë loves crème brûlée 🍮",
        created="2025-03-01 09:30:00", creation_channel="Zoë Ünal", creation_channel_id=555,
        creation_channel_username="zoe", metadata=json.dumps({"mood": "warm"}),
    )  # fmt: skip
    src.insert(
        "memories", id="memory-0002", agent_telegram_id=WENDY, content="No date on this one", created=None
    )
    src.insert(
        "memories",
        id="memory-0003",
        agent_telegram_id=WENDY,
        content="Zero date",
        created="0000-00-00 00:00:00",
    )
    src.insert("memories", id="memory-bad", agent_telegram_id=WENDY, content="", created=None)
    src.insert("memories", id="memory-h1", agent_telegram_id=HEIDI, content="Heidi's own memory")
    src.insert("memories", id="memory-x", agent_telegram_id=STRANGER, content="whose is this?")
    src.insert(
        "notes", id="note-1", agent_telegram_id=WENDY, channel_id=555, content="Prefers tea", created=None
    )
    src.insert("plans", id="plan-1", agent_telegram_id=WENDY, channel_id=555, content="Ask about the exam 📖",
               created="2025-03-02 10:00:00")  # fmt: skip
    src.insert("plans", id="plan-x", agent_telegram_id=STRANGER, channel_id=1, content="lost plan")
    src.insert(
        "summaries", id="summary-1", agent_telegram_id=WENDY, channel_id=555, content="They met at the café.",
        min_message_id=10, max_message_id=42, first_message_date="2025-02-01 08:00:00",
        last_message_date="2025-02-03 21:15:00", created="2025-02-04 00:00:00",
    )  # fmt: skip
    src.insert(
        "intentions", id="intent-1", agent_telegram_id=WENDY, content="Send Zoë the recipe", created=None
    )
    src.insert(
        "media_metadata", unique_id="AgADsticker1", kind="sticker", description="a cat waving 👋",
        status="generated", duration=None, mime_type="image/webp", media_file="AgADsticker1.webp",
        sticker_set_name="CatPack", sticker_name="👋", is_emoji_set=0, sticker_set_title="Cats",
        description_retry_count=1, last_used_at="2025-03-01 12:00:00",
    )  # fmt: skip
    src.insert(
        "media_metadata", unique_id="AgADphoto", kind="photo", description=None, status="not_understood"
    )
    src.insert(
        "media_metadata", unique_id="AgADwait", kind="gif", description=None, status="budget_exhausted"
    )
    src.insert(
        "media_metadata", unique_id="AgADmine", kind="sticker", description="AI words", status="generated"
    )
    src.insert("media_metadata", unique_id="AgADvoice", kind="voice_memo", description="hums", status="generated",
               duration=7)  # fmt: skip
    src.insert(
        "conversation_llm_overrides", agent_telegram_id=WENDY, channel_id=555, llm_model="gemini-2.5-pro"
    )
    src.insert("conversation_llm_overrides", agent_telegram_id=WENDY, channel_id=-100777, llm_model="grok-4")
    src.insert("conversation_gagged", agent_telegram_id=WENDY, channel_id=555, is_gagged=1)
    src.insert("conversation_gagged", agent_telegram_id=WENDY, channel_id=556, is_gagged=0)
    src.insert(
        "agent_activity",
        agent_telegram_id=WENDY,
        channel_telegram_id=555,
        last_send_time="2025-03-05 18:00:00",
    )
    src.insert("task_execution_log", timestamp="2025-03-05 18:00:01", agent_telegram_id=WENDY,
               channel_telegram_id=555, action_kind="send", action_details="Hi Zoë!", failure_message=None)  # fmt: skip
    src.insert("task_execution_log", timestamp="2025-03-05 18:05:00", agent_telegram_id=WENDY,
               channel_telegram_id=555, action_kind="sticker", action_details=None,
               failure_message="FloodWaitError")  # fmt: skip
    src.insert("task_execution_log", timestamp="2025-03-05 18:06:00", agent_telegram_id=STRANGER,
               channel_telegram_id=1, action_kind="send")  # fmt: skip
    src.insert("schedules", agent_telegram_id=WENDY, timezone="Europe/Paris", activities="[]")
    src.insert(
        "events",
        id="ev-1",
        agent_telegram_id=WENDY,
        channel_id=555,
        time_utc="2025-04-01 09:00:00",
        intent="x",
    )


def run(src, state_dir=None, **kwargs):
    return cw_state_import(mysql_url=src.url, state_dir=state_dir, agent_names=[], **kwargs)


def test_every_table_lands_field_by_field(agents, cw_source, state_dir, clock):
    wendy, heidi = agents
    write_session(state_dir, "Heidi", self_id=HEIDI, phone="15550000002")
    MediaDescription.objects.create(unique_id="AgADmine", description="curated words", status="curated",
                                    source="curated")  # fmt: skip
    fill(cw_source)
    report = run(cw_source, state_dir)

    m1 = Memory.objects.get(agent=wendy, entry_id="memory-0001")
    assert (m1.kind, m1.partner_id, m1.content) == ("episodic", None, "Zoë loves crème brûlée 🍮")
    assert m1.created == dt.datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    assert (m1.creation_channel, m1.creation_channel_id) == ("Zoë Ünal", 555)
    assert m1.extra == {"mood": "warm", "creation_channel_username": "zoe"}
    assert Memory.objects.get(entry_id="memory-0002").created is None
    assert Memory.objects.get(entry_id="memory-0003").created is None
    assert not Memory.objects.filter(entry_id__in=["memory-bad", "memory-x"]).exists()
    assert Memory.objects.get(entry_id="memory-h1").agent == heidi  # matched through the session's phone
    note = Note.objects.get()
    assert (note.agent, note.channel_id, note.entry_id, note.content) == (wendy, 555, "note-1", "Prefers tea")
    assert note.created == clock.now()  # the source row had no date

    plan = Plan.objects.get()
    assert (plan.agent, plan.channel_id, plan.plan_id, plan.content) == (
        wendy,
        555,
        "plan-1",
        "Ask about the exam 📖",
    )
    assert plan.created == dt.datetime(2025, 3, 2, 10, tzinfo=UTC)
    summary = Summary.objects.get()
    assert (summary.entry_id, summary.channel_id, summary.content) == (
        "summary-1",
        555,
        "They met at the café.",
    )
    assert (summary.first_message_id, summary.last_message_id) == (10, 42)
    assert summary.created == dt.datetime(2025, 2, 4, tzinfo=UTC)
    assert (summary.first_message_date, summary.last_message_date) == (
        dt.date(2025, 2, 1),
        dt.date(2025, 2, 3),
    )
    intention = Intention.objects.get()
    assert (intention.agent, intention.kind, intention.entry_id) == (wendy, "intend", "intent-1")
    assert intention.content == "Send Zoë the recipe" and intention.consumed is None

    sticker = MediaDescription.objects.get(unique_id="AgADsticker1")
    assert (sticker.kind, sticker.status, sticker.source, sticker.description) == (
        "sticker",
        "ok",
        "ai",
        "a cat waving 👋",
    )
    assert (sticker.sticker_set_name, sticker.sticker_set_title, sticker.sticker_name) == (
        "CatPack",
        "Cats",
        "👋",
    )
    assert (sticker.mime, sticker.duration) == ("image/webp", None)
    assert sticker.extra == {
        "media_file": "AgADsticker1.webp",
        "description_retry_count": 1,
        "last_used_at": "2025-03-01T12:00:00+00:00",
    }
    photo = MediaDescription.objects.get(unique_id="AgADphoto")
    assert (photo.kind, photo.status, photo.description) == ("photo", "not_understood", None)
    voice = MediaDescription.objects.get(unique_id="AgADvoice")
    assert (voice.kind, voice.extra["kind"], voice.duration) == ("other", "voice_memo", 7.0)
    assert not MediaDescription.objects.filter(unique_id="AgADwait").exists()
    mine = MediaDescription.objects.get(unique_id="AgADmine")
    assert (mine.description, mine.source) == ("curated words", "curated")

    dm = Conversation.objects.get(agent=wendy, peer_id=555)
    assert (dm.kind, dm.llm_model) == ("dm", "gemini-2.5-pro")
    assert Conversation.objects.get(agent=wendy, peer_id=-100777).kind == "group"
    assert dm.gagged is True
    assert Conversation.objects.get(agent=wendy, peer_id=556).gagged is False

    history = list(ActivityEvent.objects.filter(agent=wendy).order_by("created"))
    assert [(e.kind, e.created, e.conversation) for e in history] == [
        ("message_out", dt.datetime(2025, 3, 5, 18, tzinfo=UTC), dm),
        ("node_done", dt.datetime(2025, 3, 5, 18, 0, 1, tzinfo=UTC), dm),
        ("node_failed", dt.datetime(2025, 3, 5, 18, 5, tzinfo=UTC), dm),
    ]
    assert history[1].summary == "send: Hi Zoë!" and history[2].summary == "sticker: FloodWaitError"
    assert (
        history[2].data["task_kind"] == "sticker" and history[2].data["imported_from"] == "cw-telegram-agent"
    )

    text = "\n".join(report.lines())
    assert "Wendy: Telegram id 1001, matched by telegram id" in text
    assert "Heidi: Telegram id 1002, matched by phone (in Heidi/telegram.session)" in text
    assert "agent_telegram_id 9999: memories 1, plans 1, task_execution_log 1" in text
    assert "memories id=memory-bad: content is empty" in text
    assert "media_metadata: 1 with status budget_exhausted" in text
    assert "media_metadata: 1 already curated in Cindy (curated descriptions win)" in text
    assert Conversation.objects.get(agent=wendy, peer_id=555).gagged is True
    assert report.tables["memories"].counts["created"] == 4
    assert report.error_count == 1


def test_a_second_run_changes_nothing(agents, cw_source):
    fill(cw_source)
    run(cw_source)
    before = {
        m.__name__: list(m.objects.order_by("pk").values())
        for m in (Memory, Note, Plan, Summary, Intention, MediaDescription, Conversation, ActivityEvent)
    }
    again = run(cw_source)
    assert again.changed == 0
    assert all("created" not in t.line() and "updated" not in t.line() for t in again.tables.values())
    after = {name: list(type_.objects.order_by("pk").values()) for name, type_ in
             zip(before, (Memory, Note, Plan, Summary, Intention, MediaDescription, Conversation, ActivityEvent), strict=True)}  # fmt: skip
    for name in before:
        for row in before[name] + after[name]:
            row.pop("updated", None)
        assert before[name] == after[name], name


def test_a_changed_source_row_is_updated(agents, cw_source):
    fill(cw_source)
    run(cw_source)
    cw_source.execute("UPDATE plans SET content = %s WHERE id = 'plan-1'", "Ask about the results")
    report = run(cw_source)
    assert Plan.objects.get().content == "Ask about the results"
    assert report.tables["plans"].counts["updated"] == 1 and report.changed == 1


def test_dry_run_prints_the_same_report_and_writes_nothing(agents, cw_source):
    fill(cw_source)
    dry = run(cw_source, dry_run=True)
    assert (
        Memory.objects.count() == 0
        and ActivityEvent.objects.count() == 0
        and Conversation.objects.count() == 0
    )
    real = run(cw_source)
    assert dry.lines()[1:] == real.lines()[1:]
    assert dry.lines()[0].startswith("DRY RUN")


def test_only_the_named_agents_are_imported(agents, cw_source, capsys):
    fill(cw_source)
    call_command("import_cw_state", "--mysql", cw_source.url, "--agent", "Heidi")
    assert set(Memory.objects.values_list("agent__name", flat=True)) == set()  # Heidi's id is not known
    out = capsys.readouterr().out
    assert "Heidi: no Telegram id known" in out
    assert "agent_telegram_id 1001" not in out
    assert "memories: 2 for unknown agents, 4 for agents not selected with --agent" in out


def test_a_row_without_an_agent_id_is_an_error_and_the_rest_go_on(agents, cw_source):
    cw_source.execute(
        "ALTER TABLE plans DROP PRIMARY KEY, MODIFY agent_telegram_id BIGINT NULL"
    )  # hand-edited
    cw_source.insert("plans", id="plan-0", agent_telegram_id=None, channel_id=5, content="orphan")
    cw_source.insert("plans", id="plan-1", agent_telegram_id=WENDY, channel_id=5, content="kept")
    report = run(cw_source)
    assert report.tables["plans"].errors == ["plans id=plan-0: agent_telegram_id is empty"]
    assert Plan.objects.get().content == "kept"


def test_a_long_table_shows_progress(agents, cw_source, capsys, monkeypatch):
    monkeypatch.setattr("cwimport.services.PROGRESS_EVERY", 2)
    for n in range(5):
        cw_source.insert("memories", id=f"memory-{n}", agent_telegram_id=WENDY, content=f"fact {n}")
    call_command("import_cw_state", "--mysql", cw_source.url)
    err = capsys.readouterr().err
    assert "memories: 2/5" in err and "memories: 4/5" in err


def test_events_and_schedules_land(agents, cw_source):
    wendy, _ = agents
    wendy.timezone = "Europe/Paris"
    wendy.save()
    cw_source.insert("events", id="ev-1", agent_telegram_id=WENDY, channel_id=555, time_utc="2030-04-01 09:00:00",
                     intent="Wish Zoë luck 🍀", interval_value="1 days", occurrences=3)  # fmt: skip
    cw_source.insert("events", id="ev-2", agent_telegram_id=WENDY, channel_id=555, time_utc="2030-04-01 09:00:00",
                     intent="too often", interval_value="5 seconds")  # fmt: skip
    activities = [
        {"id": "act-1", "start_time": "2030-04-01T08:00:00+02:00", "end_time": "2030-04-01T12:00:00+02:00",
         "activity_name": "Café shift ☕", "description": "Busy", "responsiveness": 30},
        {"start_time": "2030-04-01T23:00:00", "end_time": "2030-04-02T07:00:00", "activity_name": "Sleep",
         "responsiveness": 0},
    ]  # fmt: skip
    cw_source.insert(
        "schedules", agent_telegram_id=WENDY, timezone="Europe/Paris", activities=json.dumps(activities)
    )
    report = run(cw_source)

    event = ScheduledEvent.objects.get(entry_id="ev-1")
    assert (event.agent, event.channel_id, event.intent) == (wendy, 555, "Wish Zoë luck 🍀")
    assert event.due_at == dt.datetime(2030, 4, 1, 9, tzinfo=UTC)
    assert (event.interval_seconds, event.occurrences, event.fired_count) == (86400, 3, 0)
    assert not ScheduledEvent.objects.filter(entry_id="ev-2").exists()
    assert any(
        e.startswith("events id=ev-2:") and "once a minute" in e for e in report.tables["events"].errors
    )

    cafe, sleep = ScheduleEntry.objects.filter(agent=wendy).order_by("start")
    assert (cafe.entry_id, cafe.activity, cafe.description, cafe.responsiveness) == (
        "act-1",
        "Café shift ☕",
        "Busy",
        30,
    )
    assert (cafe.start, cafe.end) == (
        dt.datetime(2030, 4, 1, 6, tzinfo=UTC),
        dt.datetime(2030, 4, 1, 10, tzinfo=UTC),
    )
    assert (sleep.activity, sleep.responsiveness) == ("Sleep", 0)
    assert sleep.start == dt.datetime(2030, 4, 1, 21, tzinfo=UTC)  # no offset: the agent's zone
    assert sleep.entry_id.startswith("act-")

    again = run(cw_source)
    assert again.changed == 0
