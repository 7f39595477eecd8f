"""What every per-table importer shares: the row loop, agent matching, upsert with change detection.

One module per source table in `cwimport/tables/`, each defining a `TableImporter` subclass; adding a
table is adding one module and listing it in `cwimport/tables/__init__.py`.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import DatabaseError, models, transaction

from agents.models import Agent
from cindy_site import clock
from cwimport.matching import AgentMatcher
from cwimport.report import Outcome, RowError, SkipRow, TableReport
from cwimport.source import Row, source_datetime


def upsert(
    model: type[models.Model],
    *,
    lookup: dict[str, Any],
    values: dict[str, Any],
    create_only: dict[str, Any] | None = None,
    save_all: bool = False,
) -> Outcome:
    """Create the row `lookup` names, or update the fields of `values` that differ; say which happened.

    A `lookup` may reach into JSON (`data__import_key`); such keys must also be set by `values`.
    `create_only` holds values used only when creating (a stand-in "created" time for a source row
    without one), so that a second run finds the row unchanged. `save_all` saves every field, for a
    model whose `save()` derives some fields from others.
    """
    existing = model.objects.filter(**lookup).first()
    if existing is None:
        plain = {name: value for name, value in lookup.items() if "__" not in name}
        model.objects.create(**plain, **values, **(create_only or {}))
        return Outcome.CREATED
    changed = [name for name, value in values.items() if getattr(existing, name) != value]
    if not changed:
        return Outcome.UNCHANGED
    for name in changed:
        setattr(existing, name, values[name])
    existing.save(**({} if save_all else {"update_fields": changed}))
    return Outcome.UPDATED


def json_value(value: Any) -> Any:
    """A JSON column's value (MySQLdb hands JSON back as text)."""
    if value is None or isinstance(value, dict | list):
        return value
    text = value.decode() if isinstance(value, bytes) else value
    try:
        return json.loads(text)
    except ValueError:
        raise RowError(f"JSON value {text[:60]!r} cannot be read") from None


class TableImporter:
    """Imports one table of the original. Subclasses set `table`, `order_by` and `import_row`."""

    table: ClassVar[str]
    order_by: ClassVar[str]
    per_agent: ClassVar[bool] = True  # rows carry agent_telegram_id
    agent_column: ClassVar[str] = "agent_telegram_id"

    def __init__(
        self,
        *,
        matcher: AgentMatcher,
        report: TableReport,
        source_zone: dt.tzinfo = dt.UTC,
        server_offset: dt.timedelta = dt.timedelta(0),
    ) -> None:
        self.matcher = matcher
        self.report = report
        self.source_zone = source_zone  # the original's server zone: agents without "Agent Timezone"
        self.server_zone = dt.timezone(server_offset)  # the MySQL server's: NOW() / CURRENT_TIMESTAMP
        self._examples: set[tuple[str, str]] = set()

    def row_id(self, row: Row) -> str:
        return str(row.get("id", "?"))

    def import_row(self, row: Row, agent: Agent | None) -> Outcome:
        raise NotImplementedError

    def run_row(self, row: Row) -> None:
        try:
            agent = self._agent_of(row) if self.per_agent else None
            if self.per_agent and agent is None:
                return
            with transaction.atomic():
                outcome = self.import_row(row, agent)
        except SkipRow as skip:
            self.report.counts[Outcome.SKIPPED] += 1
            self.report.skip_reasons[str(skip)] += 1
            return
        except KeyError as exc:
            self.report.errors.append(f"{self.table} id={self.row_id(row)}: column {exc} is missing")
            return
        except (RowError, ValueError, TypeError, DatabaseError) as exc:
            self.report.errors.append(f"{self.table} id={self.row_id(row)}: {exc}")
            return
        self.report.counts[outcome] += 1

    def _agent_of(self, row: Row) -> Agent | None:
        """The row's agent; None (counted) for an unknown agent or one not selected with --agent."""
        value = row.get(self.agent_column)
        if value is None:
            raise RowError(f"{self.agent_column} is empty")
        telegram_id = int(value)
        found = self.matcher.match(telegram_id)
        if found is None:
            self.report.unknown_agents[telegram_id] += 1
            return None
        if not self.matcher.is_selected(found.agent):
            self.report.not_selected += 1
            return None
        return found.agent

    def content_and_created(
        self, row: Row, agent: Agent | None
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """`content` (required) and `created` (the agent's wall time) for a model whose `created` may
        not be empty.

        A row without a date gets the import time, but only when created: a second run leaves it.
        """
        if not row.get("content"):
            raise RowError("content is empty")
        values: dict[str, Any] = {"content": row["content"]}
        created = self.local_when(row, "created", agent)
        if created is None:
            return values, {"created": clock.now()}
        values["created"] = created
        return values, None

    @staticmethod
    def when(row: Row, column: str) -> Any:
        """A column the original writes in UTC (`time_utc`, `timestamp`)."""
        try:
            return source_datetime(row.get(column))
        except ValueError as exc:
            raise RowError(f"{column}: {exc}") from None

    def agent_zone(self, agent: Agent | None) -> tuple[dt.tzinfo, str]:
        """The zone the original wrote the agent's local times in: its "Agent Timezone", else the server's."""
        if agent is not None and agent.timezone:
            try:
                return ZoneInfo(agent.timezone), agent.timezone
            except (ZoneInfoNotFoundError, ValueError):
                pass
        return self.source_zone, f"{getattr(self.source_zone, 'key', self.source_zone)} (--source-timezone)"

    def local_when(self, row: Row, column: str, agent: Agent | None) -> dt.datetime | None:
        """A column holding the agent's local wall time without an offset (`created`), as UTC.

        The first value of each column and zone goes into the report, so an operator sees the shift.
        """
        zone, label = self.agent_zone(agent)
        return self._converted(row, column, zone, f"{agent.name if agent else '-'}, {label}")

    def server_when(self, row: Row, column: str) -> dt.datetime | None:
        """A column the original fills with the server's NOW() / CURRENT_TIMESTAMP, as UTC."""
        return self._converted(row, column, self.server_zone, f"MySQL server time, {self.server_zone}")

    def _converted(self, row: Row, column: str, zone: dt.tzinfo, label: str) -> dt.datetime | None:
        raw = row.get(column)
        try:
            value = source_datetime(raw, zone)
        except ValueError as exc:
            raise RowError(f"{column}: {exc}") from None
        if value is not None and (column, label) not in self._examples:
            self._examples.add((column, label))
            shown = raw.strftime("%Y-%m-%d %H:%M:%S") if isinstance(raw, dt.datetime) else str(raw)
            self.report.time_examples.append(
                f"{self.table}.{column} ({label}): {shown} -> {value:%Y-%m-%d %H:%M:%S} UTC"
            )
        return value
