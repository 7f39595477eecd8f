"""Prepared reads and updates: the ORM's own statement, compiled once, giving what the queryset gives."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction

from cindy_site.prepared import PreparedRead, PreparedUpdate, insert_new
from conversations.models import Conversation, Message
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)

message_in_chat = PreparedRead(
    lambda conversation_id, message_id: Message.objects.select_related("conversation__agent").filter(
        conversation_id=conversation_id, message_id=message_id
    )[:1],
    int,
    int,
)
texts_since = PreparedRead(
    lambda conversation_id, since: Message.objects.filter(conversation_id=conversation_id, date__gte=since)
    .order_by("message_id")
    .values_list("message_id", "text", "media"),
    int,
    dt.datetime,
)
ids_by_sender_name = PreparedRead(
    lambda name: Message.objects.filter(sender_name=name).order_by("pk").values_list("pk", flat=True), str
)
mark_edited = PreparedUpdate(
    lambda pk, when, text: (Message.objects.filter(pk=pk), {"edited_at": when, "text": text, "edited": True}),
    int,
    dt.datetime,
    str,
)


def _chat():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim")
    for number in (1, 2, 3):
        Message.objects.create(
            conversation=conversation,
            message_id=number,
            sender_id=77,
            sender_name="Kim" if number != 2 else "Lee",
            date=AT + dt.timedelta(minutes=number),
            text=f"text {number}",
            media=[{"kind": "photo", "unique_id": f"p{number}"}] if number == 3 else [],
        )
    return conversation


def test_a_prepared_read_gives_the_querysets_objects_with_their_related_rows_on_every_call(
    django_assert_num_queries,
):
    conversation = _chat()
    for number in (1, 3, 2):  # compiled once, run again with other values
        expected = Message.objects.select_related("conversation__agent").get(
            conversation=conversation, message_id=number
        )
        with django_assert_num_queries(1):
            found = message_in_chat.first(conversation.pk, number)
            assert found.conversation.agent.name == conversation.agent.name  # joined, no further query
        assert {f.attname: getattr(found, f.attname) for f in Message._meta.concrete_fields} == {
            f.attname: getattr(expected, f.attname) for f in Message._meta.concrete_fields
        }
        assert found.date == AT + dt.timedelta(minutes=number) and found.date.tzinfo is not None
        assert not found._state.adding and found._state.db == "default"
    assert message_in_chat.first(conversation.pk, 99) is None


def test_a_prepared_values_list_converts_its_columns_and_compares_times_as_the_orm_does():
    conversation = _chat()
    since = AT + dt.timedelta(minutes=2)
    assert texts_since.all(conversation.pk, since) == list(
        Message.objects.filter(conversation=conversation, date__gte=since)
        .order_by("message_id")
        .values_list("message_id", "text", "media")
    )
    assert texts_since.all(conversation.pk, since)[-1][2] == [{"kind": "photo", "unique_id": "p3"}]
    assert ids_by_sender_name.all("Kim") == list(
        Message.objects.filter(sender_name="Kim").order_by("pk").values_list("pk", flat=True)
    )


def test_a_prepared_update_stores_what_the_orms_update_stores():
    conversation = _chat()
    first, second = Message.objects.filter(conversation=conversation).order_by("message_id")[:2]
    assert mark_edited.run(first.pk, AT, "new text") == 1
    Message.objects.filter(pk=second.pk).update(edited_at=AT, text="new text", edited=True)
    assert Message.objects.filter(pk=first.pk).values("edited_at", "text", "edited").get() == (
        Message.objects.filter(pk=second.pk).values("edited_at", "text", "edited").get()
    )
    assert mark_edited.run(-5, AT, "none") == 0


def test_a_value_of_the_wrong_type_or_one_the_sql_does_not_take_is_refused_by_name():
    _chat()
    with pytest.raises(TypeError, match="is not a int"):
        message_in_chat.first("1", 2)
    with pytest.raises(TypeError, match="naive datetime"):
        texts_since.all(1, dt.datetime(2026, 1, 1))
    with pytest.raises(TypeError, match="takes 2 values"):
        message_in_chat.first(1)
    unused = PreparedRead(lambda agent_id: Conversation.objects.filter(peer_id=77), int)
    with pytest.raises(ValueError, match="value 0 is not a parameter"):
        unused.all(1)
    with pytest.raises(TypeError, match="int, str and datetime"):
        PreparedRead(lambda flag: Conversation.objects.filter(muted=flag), bool)


messages_in = PreparedRead(
    lambda conversation_ids, names: Message.objects.filter(
        conversation_id__in=conversation_ids, sender_name__in=names
    )
    .order_by("message_id")
    .values_list("message_id", flat=True),
    list[int],
    list[str],
)


def test_a_list_value_is_an_in_list_compiled_once_per_length_and_an_empty_one_is_refused():
    conversation = _chat()
    assert messages_in.all([conversation.pk], ["Kim"]) == [1, 3]
    assert messages_in.all([conversation.pk, -1], ["Lee", "Kim"]) == [1, 2, 3]
    assert messages_in.all((conversation.pk, conversation.pk), ["Lee"]) == [2]  # repeated values are fine
    assert messages_in.all([conversation.pk], ["Nobody"]) == []
    with pytest.raises(ValueError, match="empty list"):
        messages_in.all([], ["Kim"])
    with pytest.raises(TypeError, match="is not a str"):
        messages_in.all([conversation.pk], [5])


def test_insert_new_stores_the_row_save_stores_and_raises_the_orms_error_on_a_taken_key():
    conversation = _chat()
    fields = {
        "conversation": conversation,
        "sender_id": 77,
        "sender_name": "Kim",
        "date": AT,
        "text": "inserted",
        "media": [{"kind": "photo", "unique_id": "x"}],
    }
    inserted = insert_new(Message(message_id=10, **fields))
    saved = Message.objects.create(message_id=11, **fields)
    assert inserted.pk and not inserted._state.adding and inserted._state.db == "default"
    columns = [
        f.attname for f in Message._meta.concrete_fields if f.attname not in ("id", "message_id", "ingested")
    ]
    assert Message.objects.filter(pk=inserted.pk).values(*columns).get() == (
        Message.objects.filter(pk=saved.pk).values(*columns).get()
    )
    assert Message.objects.get(pk=inserted.pk).ingested is not None  # auto_now_add, as save() sets it
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_new(Message(message_id=10, **fields))
    with pytest.raises(ValueError, match="has an id already"):
        insert_new(inserted)


def test_a_32_bit_id_column_takes_the_markers_and_a_value_out_of_a_columns_range_is_refused_by_name():
    from django_q.models import OrmQ

    from memory.models import Memory

    when = AT.replace(microsecond=0)
    row = OrmQ.objects.create(key="cluster", payload="p", lock=when)  # an AutoField: 32 bits on MariaDB
    take = PreparedUpdate(
        lambda pk, lock, until: (OrmQ.objects.filter(id=pk, lock=lock), {"lock": until}),
        int,
        dt.datetime,
        dt.datetime,
    )
    assert take.run(row.pk, when, when + dt.timedelta(minutes=1)) == 1
    assert take.run(row.pk, when, when) == 0  # the lock moved: another pusher took it
    below = PreparedRead(lambda position: Memory.objects.filter(position__lt=position), int)
    assert below.all(5) == []
    negative = PreparedRead(lambda position: Memory.objects.filter(position__lt=-position), int)
    with pytest.raises(ValueError, match="not a parameter|changes with the values|leaves or empties"):
        negative.all(5)
