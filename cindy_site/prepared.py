"""Reads compiled once: the SQL the ORM writes for a queryset, kept per database and thread, and run
again with other values.

Building a queryset and compiling it cost about as much CPU as running a simple indexed read, and
the inbound path runs the same few reads for every message. A `PreparedRead` builds its queryset once
per thread from marker values, compiles it, and finds each marker among the statement's parameters;
later calls put their own values in those places and run the same statement. Its rows come back as
the queryset's would: model instances (with `select_related` objects and annotations) made by
`Model.from_db`, or the converted columns of a `values_list()`.

`PreparedUpdate` does the same for `queryset.update(**values)`, and `insert_new(obj)` saves a new
model instance with one plain INSERT of its fields' values, as `save()` prepares them.

Only the values can change between calls, never the statement's shape: each argument is an `int`, a
`str` or an aware `datetime` that a filter compares with a column or an update stores in one, never
None (which turns `=` into `IS NULL`); or a non-empty list of ints or strings (`list[int]`) for an
`__in` filter, whose statement is compiled once per length.
"""

from __future__ import annotations

import datetime as dt
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections, models, router, transaction
from django.db.models import QuerySet
from django.db.models.query import (
    FlatValuesListIterable,
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)
from django.db.models.sql import UpdateQuery

#: Marker values. Ints stay within a signed 32-bit column's range and are not negative (Django checks
#: a lookup's value against its field's range); strings carry the characters a LIKE lookup escapes, so
#: a lookup that rewrites its value is refused instead of taking later values unescaped. Ints and
#: strings reach the database unchanged, a datetime as the backend adapts it
#: (`adapt_datetimefield_value`), as the call's values then are. Each statement is compiled from two
#: sets of markers (`variant` 0 and 1), which must give the same SQL with the markers in the same places.
_INT_MARKER = 1_800_000_000
_STR_MARKER = "\x00prepared-%_\\-{}-{}-{}\x00"
_TIME_MARKER = dt.datetime(1903, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
KINDS = (int, str, dt.datetime)
#: Elements of a list value (`list[int]`, `list[str]`): an `IN (...)` of as many parameters.
LIST_KINDS = (int, str)
#: The longest list value (a longer `IN (...)` belongs in a join or in batches).
MAX_LIST = 9_999


def _element(kind: Any) -> type | None:
    """The element type of a list kind (`list[int]`), None for a plain kind."""
    return kind.__args__[0] if getattr(kind, "__origin__", None) is list else None


def _marker(index: int, kind: type, element: int = 0, variant: int = 0) -> Any:
    if kind is int:
        return _INT_MARKER + variant * 200_000_000 + index * (MAX_LIST + 1) + element
    if kind is str:
        return _STR_MARKER.format(variant, index, element)
    return _TIME_MARKER + dt.timedelta(days=variant, seconds=index, microseconds=element + 1)


class _Statement:
    """A statement compiled from marker values, per database alias and vendor, per length of each
    list value, and per thread."""

    def __init__(self, build: Callable, kinds: tuple[Any, ...]) -> None:
        for kind in kinds:
            if kind not in KINDS and _element(kind) not in LIST_KINDS:
                raise TypeError(
                    f"prepared statements take int, str and datetime values and lists of int or str, not {kind!r}"
                )
        self.build = build
        self.kinds = kinds
        self.name = f"prepared statement {getattr(build, '__qualname__', build)!r}"
        self._local = threading.local()
        self._model_class = None
        self._locks = False  # a read with select_for_update() goes to the database that is written

    def _markers(self, lengths: tuple[int, ...] | None = None, variant: int = 0) -> list[Any]:
        """The marker values to build with; a list value of `lengths[i]` markers (1 by default)."""
        markers: list[Any] = []
        for index, kind in enumerate(self.kinds):
            element = _element(kind)
            if element is None:
                markers.append(_marker(index, kind, variant=variant))
            else:
                count = lengths[index] if lengths else 1
                markers.append([_marker(index, element, j, variant) for j in range(count)])
        return markers

    def _twice(
        self, alias: str, lengths: tuple[int, ...], compile_one: Callable[[list[Any]], tuple]
    ) -> tuple:
        """`compile_one(markers)` → (sql, params, ...) from both sets of markers; the first one's result
        with its slots, once both gave the same SQL with the markers in the same places and every
        other parameter the same (a marker that changed the statement's shape, or that a constant
        happened to equal, would make them differ)."""
        results, slots = [], []
        for variant in (0, 1):
            try:
                result = compile_one(self._markers(lengths, variant))
            except (EmptyResultSet, FullResultSet) as exc:
                raise ValueError(
                    f"{self.name}: a value leaves or empties a condition of its SQL ({type(exc).__name__}): "
                    "compare the values with columns that can hold them"
                ) from exc
            results.append(result)
            slots.append(self._slots(result[1], connections[alias], lengths, variant))
        (sql, params, *_), (other_sql, other_params, *_) = results
        taken = {at for at, *_ in slots[0]}
        if (
            sql != other_sql
            or slots[0] != slots[1]
            or [p for at, p in enumerate(params) if at not in taken]
            != [p for at, p in enumerate(other_params) if at not in taken]
        ):
            raise ValueError(f"{self.name}: its SQL changes with the values, so it cannot be prepared")
        return (*results[0], slots[0])

    def _lengths(self, values: tuple[Any, ...]) -> tuple[int, ...]:
        """Check the values against the kinds; the length of each list value (0 for the others)."""
        if len(values) != len(self.kinds):
            raise TypeError(f"{self.name} takes {len(self.kinds)} values, not {len(values)}")
        lengths = []
        for value, kind in zip(values, self.kinds, strict=True):
            element = _element(kind)
            items = value if element is not None else (value,)
            if element is not None:
                if not isinstance(value, list | tuple):
                    raise TypeError(f"{self.name}: {value!r} is not a list")
                if not value:
                    raise ValueError(f"{self.name}: an empty list matches nothing; do not run the statement")
                if len(value) > MAX_LIST:
                    raise ValueError(f"{self.name}: a list of {len(value)} values; at most {MAX_LIST}")
            for item in items:
                wanted = element or kind
                if not isinstance(item, wanted) or isinstance(item, bool):
                    raise TypeError(f"{self.name}: {item!r} is not a {wanted.__name__}")
                if wanted is dt.datetime and item.tzinfo is None:
                    raise TypeError(f"{self.name}: {item!r} is a naive datetime; pass an aware one")
            lengths.append(len(value) if element is not None else 0)
        return tuple(lengths)

    def _slots(
        self, params, connection, lengths: tuple[int, ...], variant: int = 0
    ) -> tuple[tuple[int, int, int], ...]:
        """Where each value goes among the parameters: (parameter index, value index, element index)."""
        wanted: dict[Any, tuple[int, int]] = {}
        for index, kind in enumerate(self.kinds):
            element = _element(kind)
            for j in range(lengths[index] if element is not None else 1):
                marker = _marker(index, element or kind, j, variant)
                if kind is dt.datetime:
                    marker = connection.ops.adapt_datetimefield_value(marker)
                wanted[(type(marker), marker)] = (index, j)
        slots = [
            (at, *wanted[(type(value), value)])
            for at, value in enumerate(params)
            if (type(value), value) in wanted
        ]
        missing = sorted({place[0] for place in wanted.values()} - {slot[1] for slot in slots})
        if missing:
            raise ValueError(
                f"{self.name}: value {missing[0]} is not a parameter of its SQL (compare it with a column "
                "in a plain filter, or store it in a plain field)"
            )
        return tuple(slots)

    def _params(self, compiled, values: tuple[Any, ...], connection) -> list[Any]:
        params = list(compiled.params)
        for at, index, j in compiled.slots:
            kind = self.kinds[index]
            if kind is dt.datetime:
                params[at] = connection.ops.adapt_datetimefield_value(values[index])
            else:
                params[at] = values[index][j] if _element(kind) is not None else values[index]
        return params

    def _compiled(self, alias: str, lengths: tuple[int, ...]):
        connection = connections[alias]
        key = (alias, connection.vendor, lengths)
        cache = self._local.__dict__.setdefault("compiled", {})
        compiled = cache.get(key)
        if compiled is None:
            compiled = cache[key] = self._compile(alias, lengths)
        return connection, compiled


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, int, int], ...]  # (parameter index, value index, element index)
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]
    make: Callable[[Any, list[tuple]], list[Any]]


class PreparedRead(_Statement):
    """`build(*values)` returns the queryset; `kinds` are the values' types (`int`, `str`, `datetime`).

    `read.all(*values)` returns the rows as a list, `read.first(*values)` the first row or None (the
    queryset's own ordering and slicing apply: slice it `[:1]` for a single row).
    """

    def __init__(self, build: Callable[..., QuerySet], *kinds: type) -> None:
        super().__init__(build, kinds)

    def _compile(self, alias: str, lengths: tuple[int, ...]) -> _Compiled:
        def compile_one(markers: list[Any]) -> tuple:
            queryset = self.build(*markers)
            if queryset._prefetch_related_lookups or queryset._db is not None:
                raise ValueError(f"{self.name}: a prepared read has no prefetch_related() or using()")
            compiler = queryset.query.get_compiler(using=alias)
            sql, params = compiler.as_sql()
            return sql, params, queryset, compiler

        sql, params, queryset, compiler, slots = self._twice(alias, lengths, compile_one)
        columns = [expression for expression, _, _ in compiler.select[: compiler.col_count]]
        converters = tuple(
            (position, tuple(functions), expression)
            for position, (functions, expression) in compiler.get_converters(columns).items()
        )
        return _Compiled(sql, tuple(params), slots, converters, self._maker(queryset, compiler, alias))

    @staticmethod
    def _maker(queryset: QuerySet, compiler, alias: str) -> Callable[[Any, list[tuple]], list[Any]]:
        if queryset._iterable_class in (ValuesListIterable, FlatValuesListIterable):
            query = queryset.query
            columns = [*query.extra_select, *query.values_select, *query.annotation_select]
            if not queryset._fields or list(queryset._fields) != columns:
                raise ValueError(
                    "a prepared values_list() names its fields, in the order the SQL selects them: "
                    "plain fields, then annotations"
                )
            if queryset._iterable_class is FlatValuesListIterable:
                return lambda _db, rows: [row[0] for row in rows]
            return lambda _db, rows: [tuple(row) for row in rows]
        if queryset._iterable_class is not ModelIterable or queryset._known_related_objects:
            raise ValueError("a prepared read returns model instances or a values_list()")
        select, klass_info, annotations = compiler.select, compiler.klass_info, compiler.annotation_col_map
        model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        names = [column[0].target.attname for column in select[start:end]]
        populators = get_related_populators(klass_info, select, alias)

        def make(db, rows: list[tuple]) -> list[Any]:
            objects = []
            for row in rows:
                obj = model.from_db(db, names, row[start:end])
                for populator in populators:
                    populator.populate(row, obj)
                for name, position in annotations.items():
                    setattr(obj, name, row[position])
                objects.append(obj)
            return objects

        return make

    def all(self, *values: Any) -> list[Any]:
        lengths = self._lengths(values)
        model = self._model()
        alias = router.db_for_write(model) if self._locks else router.db_for_read(model)
        connection, compiled = self._compiled(alias, lengths)
        params = self._params(compiled, values, connection)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        if compiled.converters and rows:
            converted = []
            for row in rows:
                row = list(row)
                for position, functions, expression in compiled.converters:
                    value = row[position]
                    for function in functions:
                        value = function(value, expression, connection)
                    row[position] = value
                converted.append(row)
            rows = converted
        return compiled.make(alias, rows)

    def first(self, *values: Any) -> Any:
        rows = self.all(*values)
        return rows[0] if rows else None

    def _model(self):
        if self._model_class is None:
            queryset = self.build(*self._markers())
            self._locks = queryset.query.select_for_update
            self._model_class = queryset.model
        return self._model_class


class PreparedUpdate(_Statement):
    """`build(*values)` returns `(queryset, {field: value})`, what `queryset.update(**fields)` would
    take; `update.run(*values)` runs that UPDATE and returns the number of rows it changed. The
    queryset filters its own table only (no join), as a plain `update()` over a filter does."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]], *kinds: type) -> None:
        super().__init__(build, kinds)

    def _compile(self, alias: str, lengths: tuple[int, ...]) -> _Compiled:
        def compile_one(markers: list[Any]) -> tuple:
            queryset, fields = self.build(*markers)
            query = queryset.query.chain(UpdateQuery)
            query.add_update_values(fields)
            if query.related_updates:
                raise ValueError(f"{self.name}: updates a related table")
            sql, params = query.get_compiler(using=alias).as_sql()
            if sum(1 for alias_ in query.alias_map if query.alias_refcount[alias_]) > 1:
                raise ValueError(f"{self.name}: its filter joins another table")
            return sql, params

        sql, params, slots = self._twice(alias, lengths, compile_one)
        return _Compiled(sql, tuple(params), slots, (), lambda _db, rows: rows)

    def run(self, *values: Any) -> int:
        if self._model_class is None:
            self._model_class = self.build(*self._markers())[0].model
        lengths = self._lengths(values)
        connection, compiled = self._compiled(router.db_for_write(self._model_class), lengths)
        params = self._params(compiled, values, connection)
        with transaction.mark_for_rollback_on_error(using=connection.alias), connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return cursor.rowcount


@functools.cache
def _insert_plan(model: type[models.Model], vendor: str) -> tuple[tuple[models.Field, ...], str]:
    """The fields a new row of `model` stores (all local concrete ones but its automatic primary key)
    and the INSERT of their columns, quoted for `vendor`."""
    meta = model._meta
    if not isinstance(meta.pk, models.AutoField | models.BigAutoField | models.SmallAutoField):
        raise ValueError(f"insert_new: {model.__name__}'s primary key is not automatic")
    if meta.parents or meta.order_with_respect_to:
        raise ValueError(f"insert_new: {model.__name__} inherits a table or orders itself; save() it instead")
    fields = tuple(f for f in meta.local_concrete_fields if f is not meta.pk)
    if any(getattr(f, "generated", False) or f.has_db_default() for f in fields):
        raise ValueError(f"insert_new: {model.__name__} has a column the database fills; save() it instead")
    ops = connections[router.db_for_write(model)].ops
    columns = ", ".join(ops.quote_name(f.column) for f in fields)
    markers = ", ".join(["%s"] * len(fields))
    return fields, f"INSERT INTO {ops.quote_name(meta.db_table)} ({columns}) VALUES ({markers})"


def insert_new(obj: models.Model) -> models.Model:
    """Store a new instance (`Model(**fields)`, no primary key yet) as `obj.save()` would: each field's
    `pre_save` (`auto_now_add`) and `get_db_prep_save`, in one plain INSERT; the instance gets its id
    and counts as saved. No save signals are sent: no part of Cindy listens to them for the models it
    inserts this way. A database error (a unique key taken) is raised as the ORM raises it."""
    model = type(obj)
    if obj.pk is not None:
        raise ValueError(f"insert_new: {model.__name__} #{obj.pk} has an id already; save() it instead")
    alias = router.db_for_write(model)
    connection = connections[alias]
    fields, sql = _insert_plan(model, connection.vendor)
    obj._prepare_related_fields_for_save(operation_name="insert_new")  # an unsaved related object: ValueError
    values = [field.get_db_prep_save(field.pre_save(obj, True), connection) for field in fields]
    with transaction.mark_for_rollback_on_error(using=alias), connection.cursor() as cursor:
        cursor.execute(sql, values)
        obj.pk = cursor.lastrowid
    obj._state.adding, obj._state.db = False, alias
    return obj
