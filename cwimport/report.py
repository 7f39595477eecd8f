"""The import report: per table what was created, updated, left unchanged, skipped or refused."""

from __future__ import annotations

import dataclasses
import enum
from collections import Counter, defaultdict


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SKIPPED = "skipped"


class RowError(Exception):
    """One source row cannot be imported; the message says why. The import goes on with the next row."""


class SkipRow(Exception):
    """A row that is deliberately not imported (the message says why); counted, not an error."""


@dataclasses.dataclass
class TableReport:
    table: str
    present: bool = True
    note: str = ""
    counts: Counter = dataclasses.field(default_factory=Counter)
    unknown_agents: Counter = dataclasses.field(default_factory=Counter)
    not_selected: int = 0
    skip_reasons: Counter = dataclasses.field(default_factory=Counter)
    errors: list[str] = dataclasses.field(default_factory=list)
    time_examples: list[str] = dataclasses.field(default_factory=list)

    def line(self) -> str:
        if not self.present:
            return f"{self.table}: not in the source database ({self.note or 'older installation'})"
        parts = [f"{self.counts[o]} {o}" for o in Outcome if self.counts[o]]
        unknown = sum(self.unknown_agents.values())
        if unknown:
            parts.append(f"{unknown} for unknown agents")
        if self.not_selected:
            parts.append(f"{self.not_selected} for agents not selected with --agent")
        if self.errors:
            parts.append(f"{len(self.errors)} error" + ("s" if len(self.errors) > 1 else ""))
        text = ", ".join(parts) or "no rows"
        return f"{self.table}: {text}" + (f" ({self.note})" if self.note else "")


@dataclasses.dataclass
class Report:
    dry_run: bool = False
    agent_lines: list[str] = dataclasses.field(default_factory=list)
    tables: dict[str, TableReport] = dataclasses.field(default_factory=dict)
    sessions: list[str] = dataclasses.field(default_factory=list)
    not_imported: list[str] = dataclasses.field(default_factory=list)

    def table(self, name: str) -> TableReport:
        return self.tables.setdefault(name, TableReport(name))

    @property
    def changed(self) -> int:
        return sum(t.counts[Outcome.CREATED] + t.counts[Outcome.UPDATED] for t in self.tables.values())

    @property
    def error_count(self) -> int:
        return sum(len(t.errors) for t in self.tables.values())

    def lines(self) -> list[str]:
        out = ["DRY RUN: nothing was written." if self.dry_run else "Import from cw-telegram-agent"]
        out.append("Agents:")
        out += [f"  {line}" for line in self.agent_lines] or ["  (none selected)"]
        out.append("Tables:")
        out += [f"  {t.line()}" for t in self.tables.values()]
        unknown: dict[int, dict[str, int]] = defaultdict(dict)
        for t in self.tables.values():
            for telegram_id, n in t.unknown_agents.items():
                unknown[telegram_id][t.table] = n
        if unknown:
            out.append(
                "Rows for unknown agents (not imported; import the persona with importagents and run again):"
            )
            for telegram_id, by_table in sorted(unknown.items()):
                detail = ", ".join(f"{table} {n}" for table, n in by_table.items())
                out.append(f"  agent_telegram_id {telegram_id}: {detail}")
        skips = [(t.table, reason, n) for t in self.tables.values() for reason, n in t.skip_reasons.items()]
        if skips:
            out.append("Skipped rows:")
            out += [f"  {table}: {n} {reason}" for table, reason, n in skips]
        examples = [e for t in self.tables.values() for e in t.time_examples]
        if examples:
            out.append("Times (the first value of each column and zone, as written -> as imported):")
            out += [f"  {e}" for e in examples]
        errors = [e for t in self.tables.values() for e in t.errors]
        if errors:
            out.append("Errors (these rows were not imported; the others were):")
            out += [f"  {e}" for e in errors]
        out.append("Sessions:")
        out += [f"  {line}" for line in self.sessions] or ["  (none)"]
        if self.not_imported:
            out.append("Not imported:")
            out += [f"  {line}" for line in self.not_imported]
        return out
