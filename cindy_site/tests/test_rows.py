"""Model instances from plain SQL rows, and rows stored with one plain INSERT (cindy_site/rows.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction

from cindy_site import rows
from conversations.models import Conversation, Message
from engine.tests.cast import make_agent

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def _message(conversation: Conversation, number: int, **fields) -> Message:
    return Message.objects.create(
        conversation=conversation,
        message_id=number,
        sender_id=77,
        sender_name="Kim",
        date=AT + dt.timedelta(minutes=number),
        text=f"text {number}",
        is_agent=number == 2,
        media=[{"kind": "photo", "unique_id": f"p{number}"}],
        **fields,
    )


def _read(model, pk):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.columns(model, 't')} FROM {rows.table(model)} t WHERE t.id = %s", [pk])
        return cursor.fetchone()


def test_a_row_becomes_the_instance_the_orm_reads_with_aware_times_booleans_and_json():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim")
    message = _message(conversation, 2, edited_at=AT)

    found = rows.from_row(Message, _read(Message, message.pk))
    assert _values(found) == _values(Message.objects.get(pk=message.pk))
    assert found.date == AT + dt.timedelta(minutes=2) and found.date.tzinfo is not None
    assert found.is_agent is True and found.media == [{"kind": "photo", "unique_id": "p2"}]
    assert not found._state.adding and found._state.db == "default"
    assert _values(rows.from_row(type(agent), _read(type(agent), agent.pk))) == _values(
        type(agent).objects.get()
    )


def test_a_joined_row_gives_each_model_and_a_missing_left_join_gives_none():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim")
    row = (*_read(Conversation, conversation.pk), *[None] * rows.width(Message))
    found, missing = rows.from_joined_row(row, Conversation, Message)
    assert _values(found) == _values(Conversation.objects.get()) and missing is None


def test_selected_columns_convert_as_a_values_list_converts_them():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim")
    message = _message(conversation, 1)
    names = ("date", "is_agent", "media", "text")
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT date, is_agent, media, text FROM {rows.table(Message)} WHERE id = %s", [message.pk]
        )
        raw = cursor.fetchone()
    assert rows.convert(Message, raw, names=names) == list(
        Message.objects.filter(pk=message.pk).values_list(*names).get()
    )


def test_insert_stores_the_row_save_stores_and_raises_the_orms_error_on_a_taken_key():
    agent = make_agent()
    conversation = Conversation.objects.create(agent=agent, peer_id=77, kind="dm", title="Kim")
    fields = {"conversation": conversation, "sender_id": 77, "date": AT, "text": "x", "media": [{"a": 1}]}
    new = Message(message_id=10, **fields)
    inserted = rows.insert(new)
    saved = Message.objects.create(message_id=11, **fields)
    assert inserted.pk == new.pk and not inserted._state.adding and inserted._state.db == "default"
    columns = [
        f.attname for f in Message._meta.concrete_fields if f.attname not in ("id", "message_id", "ingested")
    ]
    assert Message.objects.filter(pk=inserted.pk).values(*columns).get() == (
        Message.objects.filter(pk=saved.pk).values(*columns).get()
    )
    assert Message.objects.get(pk=inserted.pk).ingested is not None  # auto_now_add, as save() sets it
    assert inserted.conversation is conversation  # the related object given stays at hand
    with pytest.raises(IntegrityError), transaction.atomic():
        rows.insert(Message(message_id=10, **fields))
    with pytest.raises(ValueError, match="has an id already"):
        rows.insert(inserted)
    with pytest.raises(ValueError, match="not saved yet"):
        rows.insert(
            Message(message_id=12, **{**fields, "conversation": Conversation(agent=agent, peer_id=1)})
        )


def test_upsert_creates_then_replaces_on_the_key_and_leaves_unwritten_columns_as_they_are():
    from agents.models import TelegramEntity

    agent = make_agent("Upsert")
    names = ("agent", "entity_id", "access_hash", "username", "phone", "name")
    key = ("agent", "entity_id")
    TelegramEntity.objects.create(agent=agent, entity_id=7, access_hash=1, username="old", date=1234)
    assert (
        rows.upsert(
            TelegramEntity,
            [(agent.pk, 7, 2, "new", None, "Ann"), (agent.pk, 8, 3, None, "+1", None)],
            names=names,
            key=key,
        )
        == 2
    )
    got = {
        e.entity_id: (e.access_hash, e.username, e.phone, e.name, e.date)
        for e in TelegramEntity.objects.filter(agent=agent)
    }
    # The row of 7 replaced in place (its `date`, not written, kept), 8 created.
    assert got == {7: (2, "new", None, "Ann", 1234), 8: (3, None, "+1", None, None)}
    assert rows.upsert(TelegramEntity, [], names=names, key=key) == 0
    with pytest.raises(
        ValueError, match=r"the key \['entity_id'\] of TelegramEntity is not among the columns"
    ):
        rows.upsert(TelegramEntity, [(agent.pk, 9)], names=("agent", "access_hash"), key=key)
