"""Reading the original's MySQL database: the connection URL, which tables exist, rows in batches."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

import MySQLdb
import MySQLdb.cursors

Row = dict[str, Any]


class SourceError(Exception):
    """The source database cannot be reached or read; the message names the URL part to fix."""


def connect(url: str) -> MySQLdb.connections.Connection:
    """Open `mysql://USER:PASS@HOST[:PORT]/DB` read-only in intent (the importer only SELECTs)."""
    parts = urlparse(url)
    if parts.scheme not in ("mysql", "mariadb"):
        raise SourceError(f"--mysql {url!r}: expected mysql://USER:PASS@HOST/DB (scheme is {parts.scheme!r})")
    database = parts.path.lstrip("/")
    if not database:
        raise SourceError(f"--mysql {_redact(url)}: no database name: add /DB at the end")
    try:
        conn = MySQLdb.connect(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 3306,
            user=unquote(parts.username or "root"),
            passwd=unquote(parts.password or ""),
            db=unquote(database),
            charset="utf8mb4",
            use_unicode=True,
        )
    except MySQLdb.Error as exc:
        raise SourceError(f"--mysql {_redact(url)}: cannot connect: {exc}") from None
    cursor = conn.cursor()
    # Columns the original fills with NOW() / CURRENT_TIMESTAMP hold the server's wall time: measure the
    # server zone's offset before switching this session to UTC (TIMESTAMP columns then read as UTC).
    cursor.execute("SELECT TIMESTAMPDIFF(SECOND, UTC_TIMESTAMP(), NOW())")
    conn.cw_server_offset = dt.timedelta(seconds=round(int(cursor.fetchone()[0]) / 60) * 60)
    cursor.execute("SET time_zone = '+00:00'")
    return conn


def _redact(url: str) -> str:
    parts = urlparse(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url


def existing_tables(conn: MySQLdb.connections.Connection) -> set[str]:
    cursor = conn.cursor()
    cursor.execute("SHOW TABLES")
    return {row[0] for row in cursor.fetchall()}


def count_rows(conn: MySQLdb.connections.Connection, table: str) -> int:
    cursor = conn.cursor()
    cursor.execute(f"SELECT COUNT(*) FROM `{table}`")
    return int(cursor.fetchone()[0])


def iter_rows(conn: MySQLdb.connections.Connection, table: str, *, order_by: str) -> Iterator[Row]:
    """Every row of `table` as a dict, streamed (a server-side cursor), in a stable order.

    `SELECT *` on purpose: installations of different ages have different columns (`metadata` came and
    went, `description_retry_count` came later); importers read what is there with `row.get`.
    """
    cursor = conn.cursor(MySQLdb.cursors.SSDictCursor)
    cursor.execute(f"SELECT * FROM `{table}` ORDER BY {order_by}")
    try:
        while batch := cursor.fetchmany(500):
            yield from batch
    finally:
        cursor.close()


_TEXT_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d")


def source_datetime(value: Any, zone: dt.tzinfo = dt.UTC) -> dt.datetime | None:
    """A DATETIME value from the original as an aware UTC datetime.

    A value without an offset is wall time in `zone`: UTC for the columns the original writes in UTC
    (`time_utc`, `timestamp`), the agent's zone for `created` (the original stores the agent's local
    time without its offset). Zero dates (`0000-00-00 00:00:00`, which MySQLdb hands back as text or
    None) mean "unknown" and become None. Text in an older ISO form (with `T`, a zone offset or `Z`)
    is read too. Anything else raises ValueError naming the value.
    """
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return (
            value.replace(tzinfo=zone).astimezone(dt.UTC)
            if value.tzinfo is None
            else value.astimezone(dt.UTC)
        )
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=zone).astimezone(dt.UTC)
    text = value.decode() if isinstance(value, bytes) else str(value)
    text = text.strip()
    if not text or text.startswith("0000-00-00"):
        return None
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        parsed = None
        for fmt in _TEXT_FORMATS:
            try:
                parsed = dt.datetime.strptime(text, fmt)
                break
            except ValueError:
                continue
    if parsed is None:
        raise ValueError(f"date {text!r} is not a date the original writes (YYYY-MM-DD HH:MM:SS)")
    return (
        parsed.replace(tzinfo=zone).astimezone(dt.UTC) if parsed.tzinfo is None else parsed.astimezone(dt.UTC)
    )
