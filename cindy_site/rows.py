"""Model instances from plain SQL rows, and a new row stored with one plain INSERT, through public API.

The inbound path's reads and writes are named functions in their apps' selectors and services, with
their SQL written out (each says why it is not a plain ORM call). They share these helpers:

- `columns(model, table)`: the SELECT list of a model's concrete fields, quoted, in `_meta` order;
- `from_row(model, row, using=...)`: the instance `Model.from_db` makes of those columns, each value
  converted as the ORM would (aware date-times, booleans, decimals, JSON through the field's own
  `from_db_value`);
- `insert(obj)`: a new instance stored as `save()` stores it (each field's `pre_save` and
  `get_db_prep_save`), without save signals;
- `upsert(model, values, names=..., key=...)`: rows created or replaced on a unique key in one
  statement (`upsert_sql`: `INSERT ... ON CONFLICT` on SQLite, `ON DUPLICATE KEY UPDATE` on
  MariaDB/MySQL), as `bulk_create(update_conflicts=True)` writes them, without compiling a query.

Why plain SQL there: building and compiling a queryset costs about ten times the CPU of running a
simple indexed read. Issue 35 measured about 0.2 ms for an ORM read against 0.014 ms through the
cursor; timed under pytest on SQLite on a loaded two-core machine (`time.process_time` over 2,000
calls each), the agent read took 1.86 ms through the ORM against 0.26 ms through `agent_by_pk`, the
conversation by key 2.0 against 0.18 ms, an earlier-message test 0.78 against 0.05 ms, and the
planning task's node with its relations 5.4 against 0.83 ms.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, models, router, transaction
from django.utils import timezone

M = TypeVar("M", bound=models.Model)


def quote(name: str, *, using: str = "default") -> str:
    return connections[using].ops.quote_name(name)


@functools.cache
def table(model: type[models.Model], *, using: str = "default") -> str:
    """The model's table name, quoted."""
    return quote(model._meta.db_table, using=using)


@functools.cache
def columns(model: type[models.Model], alias: str, *, using: str = "default") -> str:
    """`alias.col, ...` of every concrete field of `model`, in the order `from_row` reads them."""
    q = connections[using].ops.quote_name
    return ", ".join(f"{q(alias)}.{q(f.column)}" for f in model._meta.concrete_fields)


def width(model: type[models.Model]) -> int:
    """How many columns `columns(model, ...)` selects."""
    return len(model._meta.concrete_fields)


def _aware(value: Any, _connection: Any) -> Any:
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value)
    if settings.USE_TZ and timezone.is_naive(value):
        return timezone.make_aware(value, dt.UTC)  # both backends store UTC
    return value


def _duration(value: Any, _connection: Any) -> Any:
    return value if isinstance(value, dt.timedelta) else dt.timedelta(microseconds=int(value))


def _converter(field: models.Field) -> Callable[[Any, Any], Any] | None:
    """How a value of `field` read by a plain cursor becomes the value the ORM would give (None:
    as the driver returns it)."""
    if hasattr(field, "from_db_value"):
        return lambda value, connection: field.from_db_value(value, None, connection)
    kind = field.get_internal_type()
    if kind == "DateTimeField":
        return _aware
    if kind == "BooleanField":
        return lambda value, _connection: bool(value)
    if kind == "DurationField":
        return _duration
    if kind == "DecimalField":  # as the ORM gives it: at the field's decimal places
        places = decimal.Decimal(1).scaleb(-field.decimal_places)
        return lambda value, _connection: field.to_python(value).quantize(places, context=field.context)
    if kind in {"DateField", "TimeField", "UUIDField"}:
        return lambda value, _connection: field.to_python(value)
    return None


@functools.cache
def _plan(model: type[models.Model], names: tuple[str, ...] | None = None) -> tuple[tuple[str, ...], tuple]:
    """The attribute names of `names` (default: every concrete field) and their converters."""
    fields = model._meta.concrete_fields if names is None else [model._meta.get_field(n) for n in names]
    converters = tuple((i, c) for i, f in enumerate(fields) if (c := _converter(f)) is not None)
    return tuple(f.attname for f in fields), converters


def convert(
    model: type[models.Model],
    row: Sequence[Any],
    *,
    names: tuple[str, ...] | None = None,
    using: str = "default",
) -> list[Any]:
    """The values of `row` (the columns of `names`, default `columns(model, ...)`), converted as the
    ORM converts them."""
    _attnames, converters = _plan(model, names)
    values = list(row)
    connection = connections[using]
    for i, function in converters:
        if values[i] is not None:
            values[i] = function(values[i], connection)
    return values


def from_row(model: type[M], row: Sequence[Any], *, using: str = "default") -> M:
    """The instance of `model` whose `columns(model, ...)` are `row` (read from `using`)."""
    names, _converters = _plan(model)
    return model.from_db(using, names, convert(model, row, using=using))


def value_of(field: models.Field, value: Any, *, using: str = "default") -> Any:
    """`value` as a parameter compared with or stored in `field`'s column (an aware date-time as the
    backend stores it)."""
    return field.get_db_prep_value(value, connections[using], prepared=False)


@functools.cache
def _insert_plan(model: type[models.Model], vendor: str) -> tuple[tuple[models.Field, ...], str]:
    meta = model._meta
    if not isinstance(meta.pk, models.AutoField | models.BigAutoField | models.SmallAutoField):
        raise ValueError(f"insert: {model.__name__}'s primary key is not automatic")
    if meta.parents:
        raise ValueError(f"insert: {model.__name__} inherits a table; save() it instead")
    fields = tuple(f for f in meta.concrete_fields if f is not meta.pk)
    if any(getattr(f, "generated", False) or f.has_db_default() for f in fields):
        raise ValueError(f"insert: {model.__name__} has a column the database fills; save() it instead")
    using = router.db_for_write(model)
    cols = ", ".join(quote(f.column, using=using) for f in fields)
    marks = ", ".join(["%s"] * len(fields))
    return fields, f"INSERT INTO {table(model, using=using)} ({cols}) VALUES ({marks})"  # noqa: S608


def insert(obj: M) -> M:
    """Store a new instance (no primary key yet) as `obj.save()` would, in one plain INSERT, and
    return it as saved (`Model.from_db`, with the related objects `obj` holds; `obj` gets the id). No save signals are sent: none of the models stored
    this way has a receiver. A database error (a unique key taken) is raised as the ORM raises it.

    Why: `save()` builds and compiles an insert query, about 0.15 ms of CPU; the inbound path stores
    a message, a graph and node, events and a task row per message."""
    model = type(obj)
    if obj.pk is not None:
        raise ValueError(f"insert: {model.__name__} #{obj.pk} has an id already; save() it instead")
    using = router.db_for_write(model)
    connection = connections[using]
    fields, sql = _insert_plan(model, connection.vendor)
    for field in fields:  # an unsaved related object fails as save() fails
        if field.is_relation and field.is_cached(obj):
            related = field.get_cached_value(obj)
            if related is not None and related.pk is None:
                raise ValueError(f"insert: {model.__name__}.{field.name} is not saved yet")
    python = {field: field.pre_save(obj, True) for field in fields}
    values = [field.get_db_prep_save(value, connection) for field, value in python.items()]
    with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
        cursor.execute(sql, values)
        pk = cursor.lastrowid
    concrete = model._meta.concrete_fields
    saved = model.from_db(
        using, [f.attname for f in concrete], [pk if f.primary_key else python[f] for f in concrete]
    )
    for field in fields:  # the related objects the caller gave stay at hand, as on a saved instance
        if field.is_relation and field.is_cached(obj):
            field.set_cached_value(saved, field.get_cached_value(obj))
    obj.pk = pk
    return saved


@functools.lru_cache(maxsize=256)
def upsert_sql(
    model: type[models.Model],
    names: tuple[str, ...],
    key: tuple[str, ...],
    count: int,
    *,
    using: str = "default",
) -> str:
    """The statement that creates or replaces `count` rows of `model` given as the values of the
    fields (or columns) `names`, matched on `key` (the fields of a unique constraint, among `names`;
    MariaDB/MySQL match on any unique key, as `bulk_create` does there)."""
    meta = model._meta
    missing = [name for name in key if name not in names]
    if missing:
        raise ValueError(f"upsert: the key {missing} of {model.__name__} is not among the columns written")
    connection = connections[using]
    q = connection.ops.quote_name
    cols = [meta.get_field(name).column for name in names]
    keys = {meta.get_field(name).column for name in key}
    marks = ", ".join(["(" + ", ".join(["%s"] * len(cols)) + ")"] * count)
    head = f"INSERT INTO {table(model, using=using)} ({', '.join(q(c) for c in cols)}) VALUES {marks}"  # noqa: S608
    updated = [c for c in cols if c not in keys]
    if connection.vendor == "mysql":
        return head + " ON DUPLICATE KEY UPDATE " + ", ".join(f"{q(c)} = VALUES({q(c)})" for c in updated)
    target = ", ".join(q(meta.get_field(name).column) for name in key)
    return (
        head
        + f" ON CONFLICT ({target}) DO UPDATE SET "
        + ", ".join(f"{q(c)} = excluded.{q(c)}" for c in updated)
    )


def upsert(
    model: type[models.Model],
    values: Sequence[Sequence[Any]],
    *,
    names: tuple[str, ...],
    key: tuple[str, ...],
) -> int:
    """Create or replace the rows `values` (each the Python values of the fields `names`, prepared
    by each field as `save()` prepares it) matched on `key`, in one statement; returns how many were
    given. No save signals are sent.

    Why: `bulk_create(update_conflicts=True)` builds and compiles an insert query each time, about
    0.5 ms of CPU for one row; the gateway writes each connected account's Telegram session state
    this way (agents/telethon_session.py)."""
    if not values:
        return 0
    using = router.db_for_write(model)
    connection = connections[using]
    fields = [model._meta.get_field(name) for name in names]
    params = [
        field.get_db_prep_save(value, connection)
        for row in values
        for field, value in zip(fields, row, strict=True)
    ]
    with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
        cursor.execute(upsert_sql(model, tuple(names), tuple(key), len(values), using=using), params)
    return len(values)


def from_joined_row(row: Sequence[Any], *models_: type[models.Model], using: str = "default") -> list[Any]:
    """One instance of each model from a row of `columns(model, ...)` lists joined in that order; a
    model whose primary key is NULL there (a LEFT JOIN that found nothing) gives None."""
    objects: list[Any] = []
    at = 0
    for model in models_:
        end = at + width(model)
        part = row[at:end]
        key = part[list(model._meta.concrete_fields).index(model._meta.pk)]
        objects.append(None if key is None else from_row(model, part, using=using))
        at = end
    return objects
