"""The media reads every planned turn runs, in plain SQL (media_catalog/selectors.py)."""

from __future__ import annotations

import pytest

from engine.tests.cast import make_agent
from media_catalog.models import LibraryItem, StickerAccess
from media_catalog.selectors import library_items_of, sticker_access_of

pytestmark = pytest.mark.django_db


def _values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_sticker_access_and_the_library_are_the_orms_rows():
    agent, other = make_agent(), make_agent("Other", phone="+15550000009")
    assert sticker_access_of(agent_id=agent.pk) is None and library_items_of(agent_id=agent.pk) == []
    StickerAccess.objects.create(agent=agent, premium=True, saved_stickers=[{"set": "s", "name": "n"}])
    for unique_id in ("b", "a"):
        LibraryItem.objects.create(agent=agent, unique_id=unique_id, description=f"item {unique_id}")
    LibraryItem.objects.create(agent=other, unique_id="c")
    access = sticker_access_of(agent_id=agent.pk)
    assert _values(access) == _values(StickerAccess.objects.get(agent=agent)) and access.premium is True
    items = library_items_of(agent_id=agent.pk)
    assert [i.unique_id for i in items] == ["a", "b"]
    assert [_values(i) for i in items] == [
        _values(i) for i in LibraryItem.objects.filter(agent=agent).order_by("unique_id")
    ]
