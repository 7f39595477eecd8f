"""Reads compiled once: the SQL the ORM writes for a queryset, kept per database and thread, and run
again with other values.

Building a queryset and compiling it cost about as much CPU as running a simple indexed read, and
the inbound path runs the same few reads for every message. A `PreparedRead` builds its queryset once
per thread from marker values, compiles it, and finds each marker among the statement's parameters;
later calls put their own values in those places and run the same statement. Its rows come back as
the queryset's would: model instances (with `select_related` objects and annotations) made by
`Model.from_db`, or the converted columns of a `values_list()`.

`PreparedUpdate` does the same for `queryset.update(**values)`.

Only the values can change between calls, never the statement's shape: each argument is an `int`, a
`str` or an aware `datetime` that a filter compares with a column or an update stores in one, never
None (which turns `=` into `IS NULL`) and never a list (whose length is part of the SQL).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import connections, router
from django.db.models import QuerySet
from django.db.models.query import (
    FlatValuesListIterable,
    ModelIterable,
    ValuesListIterable,
    get_related_populators,
)
from django.db.models.sql import UpdateQuery

#: Marker values: unlikely as real ids, text or times. Ints and strings reach the database unchanged;
#: a datetime as the backend adapts it (`adapt_datetimefield_value`), as the call's values then are.
_INT_MARKER = -7_301_946_582_000
_STR_MARKER = "\x00prepared-{}\x00"
_TIME_MARKER = dt.datetime(1903, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
KINDS = (int, str, dt.datetime)


def _marker(index: int, kind: type) -> Any:
    if kind is int:
        return _INT_MARKER - index
    if kind is str:
        return _STR_MARKER.format(index)
    return _TIME_MARKER + dt.timedelta(microseconds=index + 1)


def _check(name: str, kinds: tuple[type, ...], values: tuple[Any, ...]) -> None:
    if len(values) != len(kinds):
        raise TypeError(f"{name} takes {len(kinds)} values, not {len(values)}")
    for value, kind in zip(values, kinds, strict=True):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TypeError(f"{name}: {value!r} is not a {kind.__name__}")
        if kind is dt.datetime and value.tzinfo is None:
            raise TypeError(f"{name}: {value!r} is a naive datetime; pass an aware one")


class _Statement:
    """A statement compiled from marker values, per database alias and vendor and per thread."""

    def __init__(self, build: Callable, kinds: tuple[type, ...]) -> None:
        if any(kind not in KINDS for kind in kinds):
            raise TypeError(f"prepared statements take int, str and datetime values, not {kinds!r}")
        self.build = build
        self.kinds = kinds
        self.name = f"prepared statement {getattr(build, '__qualname__', build)!r}"
        self._local = threading.local()
        self._model_class = None

    def _markers(self) -> list[Any]:
        return [_marker(index, kind) for index, kind in enumerate(self.kinds)]

    def _slots(self, params, connection) -> tuple[tuple[int, int], ...]:
        """Where each value goes among the parameters: (parameter index, value index)."""
        slots = []
        for index, kind in enumerate(self.kinds):
            marker = _marker(index, kind)
            if kind is dt.datetime:
                marker = connection.ops.adapt_datetimefield_value(marker)
            found = [at for at, value in enumerate(params) if type(value) is type(marker) and value == marker]
            if not found:
                raise ValueError(
                    f"{self.name}: value {index} is not a parameter of its SQL (compare it with a column "
                    "in a plain filter, or store it in a plain field)"
                )
            slots.extend((at, index) for at in found)
        return tuple(slots)

    def _params(self, compiled, values: tuple[Any, ...], connection) -> list[Any]:
        _check(self.name, self.kinds, values)
        params = list(compiled.params)
        for at, index in compiled.slots:
            value = values[index]
            params[at] = (
                connection.ops.adapt_datetimefield_value(value) if self.kinds[index] is dt.datetime else value
            )
        return params

    def _compiled(self, alias: str):
        connection = connections[alias]
        key = (alias, connection.vendor)
        cache = self._local.__dict__.setdefault("compiled", {})
        compiled = cache.get(key)
        if compiled is None:
            compiled = cache[key] = self._compile(alias)
        return connection, compiled


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]
    slots: tuple[tuple[int, int], ...]  # (parameter index, argument index)
    converters: tuple[tuple[int, tuple[Callable, ...], Any], ...]
    make: Callable[[Any, list[tuple]], list[Any]]


class PreparedRead(_Statement):
    """`build(*values)` returns the queryset; `kinds` are the values' types (`int`, `str`, `datetime`).

    `read.all(*values)` returns the rows as a list, `read.first(*values)` the first row or None (the
    queryset's own ordering and slicing apply: slice it `[:1]` for a single row).
    """

    def __init__(self, build: Callable[..., QuerySet], *kinds: type) -> None:
        super().__init__(build, kinds)

    def _compile(self, alias: str) -> _Compiled:
        queryset = self.build(*self._markers())
        compiler = queryset.query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        columns = [expression for expression, _, _ in compiler.select[: compiler.col_count]]
        converters = tuple(
            (position, tuple(functions), expression)
            for position, (functions, expression) in compiler.get_converters(columns).items()
        )
        slots = self._slots(params, connections[alias])
        return _Compiled(sql, tuple(params), slots, converters, self._maker(queryset, compiler, alias))

    @staticmethod
    def _maker(queryset: QuerySet, compiler, alias: str) -> Callable[[Any, list[tuple]], list[Any]]:
        if queryset._iterable_class in (ValuesListIterable, FlatValuesListIterable):
            if not queryset._fields or compiler.has_extra_select or queryset.query.annotation_select:
                raise ValueError("a prepared values_list() names plain fields")
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
        alias = router.db_for_read(self._model())
        connection, compiled = self._compiled(alias)
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
            self._model_class = self.build(*self._markers()).model
        return self._model_class


class PreparedUpdate(_Statement):
    """`build(*values)` returns `(queryset, {field: value})`, what `queryset.update(**fields)` would
    take; `update.run(*values)` runs that UPDATE and returns the number of rows it changed. The
    queryset filters its own table only (no join), as a plain `update()` over a filter does."""

    def __init__(self, build: Callable[..., tuple[QuerySet, dict[str, Any]]], *kinds: type) -> None:
        super().__init__(build, kinds)

    def _compile(self, alias: str) -> _Compiled:
        queryset, fields = self.build(*self._markers())
        query = queryset.query.chain(UpdateQuery)
        query.add_update_values(fields)
        if query.related_updates:
            raise ValueError(f"{self.name}: updates a related table")
        compiler = query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        if sum(1 for alias_ in query.alias_map if query.alias_refcount[alias_]) > 1:
            raise ValueError(f"{self.name}: its filter joins another table")
        return _Compiled(
            sql, tuple(params), self._slots(params, connections[alias]), (), lambda _db, rows: rows
        )

    def run(self, *values: Any) -> int:
        if self._model_class is None:
            self._model_class = self.build(*self._markers())[0].model
        connection, compiled = self._compiled(router.db_for_write(self._model_class))
        params = self._params(compiled, values, connection)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            return cursor.rowcount
