"""Telethon session files written by Telethon itself, in an original-style state directory."""

from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pytest
from telethon.crypto import AuthKey
from telethon.sessions import SQLiteSession
from telethon.tl import types

AUTH_KEY = bytes(range(256))
UPDATE_DATE = dt.datetime(2026, 1, 5, 11, 0, tzinfo=dt.UTC)


def write_session(
    state_dir: Path, config_name: str, *, self_id: int, phone: str, age_seconds: float = 3600
) -> Path:
    """`<state_dir>/<config_name>/telegram.session` as the original's Telethon leaves it, aged."""
    folder = state_dir / config_name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "telegram.session"
    session = SQLiteSession(str(path))
    session.set_dc(4, "149.154.167.91", 443)
    session.auth_key = AuthKey(data=AUTH_KEY)
    session.process_entities(
        [
            types.User(
                id=self_id,
                access_hash=111,
                is_self=True,
                first_name="Heidi",
                phone=phone,
                username="heidi_bot",
            ),
            types.User(id=555, access_hash=-222, first_name="Zoë", last_name="Ünal", username="zoe"),
            types.Channel(
                id=777, title="Bücherclub 📚", photo=types.ChatPhotoEmpty(), date=UPDATE_DATE, access_hash=333
            ),
        ]
    )
    session.set_update_state(
        0, types.updates.State(pts=4100, qts=7, date=UPDATE_DATE, seq=12, unread_count=0)
    )
    session.set_update_state(777, types.updates.State(pts=88, qts=0, date=UPDATE_DATE, seq=0, unread_count=0))
    session.save()
    session.close()
    past = time.time() - age_seconds
    os.utime(path, (past, past))
    return path


@pytest.fixture
def state_dir(tmp_path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path
