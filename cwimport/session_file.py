"""The original's Telethon session files: `<state dir>/<config name>/telegram.session` (Telethon's SQLite).

Read without Telethon's SQLiteSession, which would migrate and rewrite the file: the file is opened
read-only and its `sessions`, `entities` and `update_state` tables are read as they are.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sqlite3
import time
from pathlib import Path

SESSION_FILE = "telegram.session"

STOP_HINT = (
    "stop the original first (stop its service, e.g. `systemctl stop cw-telegram-agent`, or end its "
    "`python src/run.py` process), wait until it has exited, then run import_cw_state again"
)


class SessionInUse(Exception):
    """The original process still uses the session; importing it would put one key on two connections."""


@dataclasses.dataclass(frozen=True)
class SessionFile:
    path: Path
    dc_id: int
    server_address: str
    port: int
    auth_key: bytes | None
    takeout_id: int | None
    # (marked id, access hash, username, phone, name, date)
    entities: tuple[tuple[int, int, str | None, str | None, str | None, int | None], ...]
    # entity id -> (pts, qts, date, seq)
    update_states: dict[int, tuple[int, int, dt.datetime, int]]

    def entity_with_phone(self, digits: str) -> int | None:
        """The id of the user in this session whose phone has these digits (the account itself)."""
        for entity_id, _hash, _username, phone, _name, _date in self.entities:
            if phone and only_digits(phone) == digits and entity_id > 0:
                return entity_id
        return None


def only_digits(phone: str) -> str:
    return "".join(ch for ch in phone if ch.isdigit())


def session_path(state_dir: Path, config_name: str) -> Path:
    return state_dir / config_name / SESSION_FILE


def holders_of(path: Path) -> list[int]:
    """Process ids (other than this one) that hold `path` open, from /proc; empty where /proc is absent."""
    target = os.path.realpath(path)
    found = []
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                if os.path.realpath(fd) == target:
                    found.append(int(entry.name))
                    break
        except OSError:
            continue  # another user's process, or it just exited
    return found


def check_not_in_use(path: Path, *, quiet_seconds: float) -> None:
    """Raise SessionInUse when the original's process may still run on this session.

    Three signs, any one refuses: another process has the file open (Linux /proc), SQLite cannot take
    a write lock on it (a transaction is open), or it was written within the last `quiet_seconds`
    (a running client saves its update state as updates arrive).
    """
    pids = holders_of(path)
    if pids:
        raise SessionInUse(f"{path}: open in process {', '.join(map(str, pids))}: {STOP_HINT}")
    for side in (path.with_name(path.name + "-journal"), path.with_name(path.name + "-wal")):
        if side.exists() and side.stat().st_size > 0:
            raise SessionInUse(f"{path}: {side.name} shows an unfinished write: {STOP_HINT}")
    try:
        probe = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.rollback()
        finally:
            probe.close()
    except sqlite3.OperationalError as exc:
        raise SessionInUse(f"{path}: locked ({exc}): {STOP_HINT}") from None
    age = time.time() - path.stat().st_mtime
    if age < quiet_seconds:
        raise SessionInUse(
            f"{path}: written {age:.0f} s ago (less than {quiet_seconds:.0f} s), so the original may still "
            f"run: {STOP_HINT}"
        )


def read_session_file(path: Path) -> SessionFile:
    """The session's DC, auth key, entities and update states. ValueError names what is missing."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "sessions" not in tables:
            raise ValueError(f"{path}: not a Telethon session file (no `sessions` table)")
        columns = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
        row = conn.execute("SELECT * FROM sessions").fetchone()
        if row is None:
            raise ValueError(f"{path}: the session is empty (never connected): log in with telegram_login")
        session = dict(zip(columns, row, strict=True))
        entities = ()
        if "entities" in tables:
            entities = tuple(
                # Telethon's SQLite column holds the phone as an integer; Cindy keeps it as text.
                (
                    int(r[0]),
                    int(r[1]),
                    r[2],
                    str(r[3]) if r[3] is not None else None,
                    r[4],
                    r[5] if len(r) > 5 else None,
                )
                for r in conn.execute("SELECT * FROM entities ORDER BY id")
            )
        states = {}
        if "update_state" in tables:
            for entity_id, pts, qts, date, seq in conn.execute(
                "SELECT id, pts, qts, date, seq FROM update_state ORDER BY id"
            ):
                states[int(entity_id)] = (
                    int(pts),
                    int(qts),
                    dt.datetime.fromtimestamp(date, dt.UTC),
                    int(seq),
                )
    finally:
        conn.close()
    key = session.get("auth_key")
    return SessionFile(
        path=path,
        dc_id=int(session["dc_id"]),
        server_address=session.get("server_address") or "",
        port=int(session.get("port") or 443),
        auth_key=bytes(key) if key else None,
        takeout_id=session.get("takeout_id"),
        entities=entities,
        update_states=states,
    )
