from __future__ import annotations

import datetime as dt

from conversations.models import Message
from llm.conversation import (
    agent_timezone,
    conversation_history,
    history_messages,
    history_step,
    history_window,
    render_media,
    to_chat_messages,
)
from llm.models import LLMCall
from llm.tests.conftest import add_message
from media_catalog.models import MediaDescription
from media_catalog.parts import MediaItem


def test_non_agent_messages_get_a_header_in_the_agents_timezone(dm, say):
    say(dm, 7, "hello", reply_to_id=5, sender_username="alice")

    (message,) = conversation_history(dm)

    header, text = message.parts
    assert header == {
        "kind": "header",
        "text": "[message_id 7 · from Alice (@alice, id 1001) · reply to message_id 5 · 2026-01-05 13:07 CET]",
    }
    assert text == {"kind": "text", "text": "hello"}


def test_agent_messages_have_no_header(dm, say):
    say(dm, 1, "hi there", is_agent=True)

    (message,) = conversation_history(dm)

    assert message.parts == ({"kind": "text", "text": "hi there"},)


def test_sticker_is_rendered_from_the_catalog(dm, say):
    MediaDescription.objects.create(
        unique_id="S1",
        kind="sticker",
        sticker_set_name="NNNNun",
        sticker_name="😂",
        description="a nun laughing",
    )
    say(
        dm,
        1,
        media=[
            {
                "kind": "media",
                "media_kind": "sticker",
                "unique_id": "S1",
                "sticker_set_name": "NNNNun",
                "sticker_name": "😂",
            }
        ],
    )

    (message,) = conversation_history(dm)

    assert message.parts[1] == {
        "kind": "media",
        "media_kind": "sticker",
        "unique_id": "S1",
        "rendered_text": "‹the sticker 😂 from the set NNNNun that appears as a nun laughing›",
    }


def test_photo_without_description_and_unknown_kinds_are_placeholders():
    assert render_media(MediaItem.from_part({"media_kind": "photo", "unique_id": "P"}), None) == "‹a photo›"
    assert render_media(MediaItem.from_part({"media_kind": "hologram"}), None) == "‹media of kind hologram›"
    failed = MediaDescription(unique_id="P", status=MediaDescription.Status.TIMEOUT, description=None)
    assert render_media(MediaItem.from_part({"media_kind": "photo"}), failed) == "‹a photo›"
    ok = MediaDescription(unique_id="P", status=MediaDescription.Status.OK, description="a cake\non a table")
    assert (
        render_media(MediaItem.from_part({"media_kind": "photo"}), ok)
        == "‹a photo that appears as a cake on a table›"
    )


def test_history_is_chronological_and_skips_deleted_messages(dm, say):
    say(dm, 3, "third")
    say(dm, 1, "first")
    say(dm, 2, "gone", deleted=True)

    assert [m.message_id for m in conversation_history(dm)] == [1, 3]


def test_history_is_capped_and_its_start_moves_in_steps(dm, settings):
    for i in range(1, 131):
        add_message(dm, i, f"m{i}")

    window = history_messages(dm, limit=100)
    assert len(window) <= 100
    assert window[-1].message_id == 130
    first = window[0].message_id

    add_message(dm, 131, "m131", date=dt.datetime(2026, 1, 6, tzinfo=dt.UTC))
    assert history_messages(dm, limit=100)[0].message_id == first


def test_prompt_history_does_no_description_work(dm, say, django_assert_max_num_queries):
    say(dm, 1, media=[{"kind": "media", "media_kind": "photo", "unique_id": "P9", "file": "x.jpg"}])

    with django_assert_max_num_queries(3):
        conversation_history(dm)

    assert not LLMCall.objects.exists()
    assert not MediaDescription.objects.exists()


def test_the_window_start_moves_by_cindy_history_step_at_the_boundary(dm, settings):
    """With a cap of 10 and a step of 4, the first message stays for 4 turns, then jumps by 4."""
    settings.CINDY_HISTORY_STEP = 4
    for i in range(1, 11):
        add_message(dm, i, f"m{i}")
    seen = []
    for i in range(11, 20):
        add_message(dm, i, f"m{i}")
        window = history_messages(dm, limit=10)
        assert window[-1].message_id == i
        seen.append((window[0].message_id, len(window)))

    assert seen == [(5, 7), (5, 8), (5, 9), (5, 10), (9, 7), (9, 8), (9, 9), (9, 10), (13, 7)]


def test_a_raised_history_size_shows_the_older_messages_again(dm, settings):
    """The window's stored start (set when a cap of 2 overflowed) does not cut short a larger cap."""
    for i in range(1, 9):
        add_message(dm, i, f"m{i}")
    assert [m.message_id for m in history_messages(dm, limit=2)] == [7, 8]
    dm.refresh_from_db()
    assert dm.history_window_start_id == 7

    assert [m.message_id for m in history_messages(dm, limit=500)] == list(range(1, 9))
    dm.refresh_from_db()
    assert dm.history_window_start_id is None
    assert [m.message_id for m in history_messages(dm, limit=500)] == list(range(1, 9))


def test_a_history_step_of_one_slides_every_turn(dm, settings):
    settings.CINDY_HISTORY_STEP = 1
    for i in range(1, 13):
        add_message(dm, i, f"m{i}")

    assert [m.message_id for m in history_messages(dm, limit=10)] == list(range(3, 13))


def test_by_default_the_window_start_moves_a_quarter_of_the_cap_at_a_time(dm, settings):
    """Cap 40, default step 10: the window holds 31 to 40 messages and its first message changes once
    every 10 messages; at the default cap of 500 the step is 125."""
    settings.CINDY_HISTORY_STEP = 0
    for i in range(1, 41):
        add_message(dm, i, f"m{i}")
    firsts, sizes = [], set()
    for i in range(41, 71):
        add_message(dm, i, f"m{i}")
        window = conversation_history(dm, limit=40)
        assert window[-1].message_id == i
        firsts.append(window[0].message_id)
        sizes.add(len(window))

    assert sorted(set(firsts)) == [11, 21, 31]
    assert [i for i in range(1, len(firsts)) if firsts[i] != firsts[i - 1]] == [10, 20]
    assert min(sizes) == 31 and max(sizes) == 40
    assert history_step(500) == 125 and history_step(40) == 10
    settings.CINDY_HISTORY_STEP = 400
    assert history_step(500) == 250  # at most half the cap


def test_an_edited_message_is_rendered_again(dm, say):
    """Renderings are kept per process, keyed by what they read: an edit, a re-delivery with a new
    name and a new media description each show up on the next read."""
    say(dm, 1, "hello")
    say(dm, 2, "", media=[{"kind": "media", "media_kind": "photo", "unique_id": "P1"}])
    assert [m.text for m in conversation_history(dm)][0].endswith("hello")

    Message.objects.filter(conversation=dm, message_id=1).update(
        text="hello again", edited=True, edited_at=dt.datetime(2026, 1, 5, 13, 0, tzinfo=dt.UTC)
    )
    first, second = conversation_history(dm)
    assert first.text.endswith("hello again")
    assert second.parts[-1]["rendered_text"] == "‹a photo›"

    Message.objects.filter(conversation=dm, message_id=1).update(sender_name="Alicia")
    MediaDescription.objects.create(unique_id="P1", kind="photo", description="a loaf of rye")
    first, second = conversation_history(dm)
    assert "from Alicia (id 1001)" in first.parts[0]["text"]
    assert second.parts[-1]["rendered_text"] == "‹a photo that appears as a loaf of rye›"


def test_the_history_window_reads_the_same_as_the_messages_themselves(dm, say, settings):
    """The cached rendering equals rendering the window's Message rows directly, service messages
    without text left out of the prompt but kept in the window."""
    settings.CINDY_HISTORY_STEP = 3
    for i in range(1, 30):
        say(dm, i, f"m{i}", is_agent=i % 3 == 0, forwarded_from="Bob" if i == 7 else "")
    say(dm, 30, "", is_service=True)
    conversation_history(dm, limit=12)  # warm the cache

    window = history_window(dm, limit=12)
    expected = to_chat_messages(history_messages(dm, limit=12), tz=agent_timezone(dm.agent))

    assert [m for m in window if m.in_prompt] == expected == conversation_history(dm, limit=12)
    assert [m.message_id for m in window] == [m.message_id for m in history_messages(dm, limit=12)]
    assert not window[-1].in_prompt


def _bulk_messages(conversation, count: int) -> None:
    start = dt.datetime(2026, 1, 5, 12, tzinfo=dt.UTC)
    Message.objects.bulk_create(
        Message(
            conversation=conversation,
            message_id=i,
            sender_id=1001,
            sender_name="Alice",
            date=start + dt.timedelta(seconds=i),
            text=f"m{i}",
        )
        for i in range(1, count + 1)
    )


def _window_work(conversation, *, limit: int) -> tuple[int, list[str]]:
    """SQLite virtual machine steps (a measure of the rows it reads; 0 on other databases, which have
    no such counter) and the SQL of one window read."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    conversation.refresh_from_db()
    connection.ensure_connection()
    if connection.vendor != "sqlite":
        with CaptureQueriesContext(connection) as queries:
            history_window(conversation, limit=limit)
        return 0, [q["sql"] for q in queries.captured_queries]
    steps = [0]

    def count_step() -> int:
        steps[0] += 1
        return 0

    connection.connection.set_progress_handler(count_step, 1)
    try:
        with CaptureQueriesContext(connection) as queries:
            history_window(conversation, limit=limit)
    finally:
        connection.connection.set_progress_handler(None, 1)
    return steps[0], [q["sql"] for q in queries.captured_queries]


def test_the_window_reads_as_many_rows_in_a_long_chat_as_in_a_short_one(agent, settings):
    """An unsummarized chat of 10,000 messages costs a turn the same as one of 100: no count, and
    no query reads more than the cap and one row."""
    from conversations.models import Conversation

    settings.CINDY_HISTORY_STEP = 0
    short = Conversation.objects.create(agent=agent, peer_id=1, kind=Conversation.Kind.DM)
    long = Conversation.objects.create(agent=agent, peer_id=2, kind=Conversation.Kind.DM)
    _bulk_messages(short, 100)
    _bulk_messages(long, 10_000)
    for conversation in (short, long):  # the first turn after an overflow remembers the window start
        history_window(conversation, limit=80)

    short_steps, short_sql = _window_work(short, limit=80)
    long_steps, long_sql = _window_work(long, limit=80)

    assert len(long_sql) == len(short_sql)
    assert not any("COUNT(" in sql.upper() for sql in long_sql)
    assert long_steps <= short_steps * 1.5, (short_steps, long_steps)  # 0 and 0 off SQLite
    assert [m.message_id for m in history_window(long, limit=80)][-1] == 10_000
