"""Database work over many rows at once in plain SQL: one UPDATE giving each row its own value, and
the earliest time among many agents' rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connections, models, router

#: Rows per statement (each row takes three parameters; well under SQLite's and MariaDB's limits).
BATCH = 500


def placeholders(count: int) -> str:
    """`%s, %s, ...`: the parameter markers of an SQL `IN (...)` list of `count` values."""
    return ", ".join(["%s"] * count)


def update_by_pk(model: type[models.Model], field: str, values: Mapping[Any, Any]) -> int:
    """Set `field` of each row, by primary key, to its value in `values`; returns the rows changed.

    `UPDATE t SET f = CASE pk WHEN %s THEN %s ... END WHERE pk IN (...)`, per BATCH rows. Django's
    `bulk_update` writes the same statement but builds it from one expression per row, which costs
    about as much as a query per row; here the values are parameters, prepared by the field as a
    save would prepare them.
    """
    if not values:
        return 0
    connection = connections[router.db_for_write(model)]
    quote = connection.ops.quote_name
    target = model._meta.get_field(field)
    table, column, pk = quote(model._meta.db_table), quote(target.column), quote(model._meta.pk.column)
    rows = list(values.items())
    changed = 0
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            chunk = rows[start : start + BATCH]
            params: list[Any] = []
            for key, value in chunk:
                params += [key, target.get_db_prep_save(value, connection)]
            params += [key for key, _ in chunk]
            cursor.execute(
                f"UPDATE {table} SET {column} = CASE {pk} {' '.join(['WHEN %s THEN %s'] * len(chunk))} END "
                f"WHERE {pk} IN ({placeholders(len(chunk))})",
                params,
            )
            changed += cursor.rowcount
    return changed


def earliest(
    model: type[models.Model], field: str, *, agent_ids: list[int], where: str = "", params: tuple = ()
) -> Any:
    """The smallest non-null `field` (a date-time) among `model`'s rows of `agent_ids`, with the
    optional extra condition `where` (SQL on the table's columns, with `params`); None without one.

    `SELECT f ... ORDER BY f LIMIT 1` in plain SQL: the gateway asks this for every agent it holds
    at every wait (the next node, event and schedule refresh due), and building the ORM query for a
    list of a hundred agents cost more than running it. The value is converted as the field's would be.
    """
    if not agent_ids:
        return None
    connection = connections[router.db_for_read(model)]
    quote = connection.ops.quote_name
    column = quote(model._meta.get_field(field).column)
    sql = (
        f"SELECT {column} FROM {quote(model._meta.db_table)} "  # noqa: S608
        f"WHERE {quote('agent_id')} IN ({placeholders(len(agent_ids))}) AND {column} IS NOT NULL"
        + (f" AND {where}" if where else "")
        + f" ORDER BY {column} LIMIT 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*agent_ids, *params])
        row = cursor.fetchone()
    if row is None:
        return None
    return connection.ops.convert_datetimefield_value(row[0], None, connection)
