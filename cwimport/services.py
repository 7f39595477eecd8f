"""`cw_state_import`: the whole import, as `import_cw_state` runs it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import transaction

from cwimport.matching import AgentMatcher
from cwimport.report import Report
from cwimport.sessions import session_import
from cwimport.source import connect, count_rows, existing_tables, iter_rows
from cwimport.tables import IMPORTERS, NOT_IMPORTED

PROGRESS_EVERY = 1000


def cw_state_import(
    *,
    mysql_url: str | None,
    state_dir: Path | None,
    agent_names: list[str],
    dry_run: bool = False,
    quiet_seconds: float = 300.0,
    source_timezone: str = "UTC",
    progress: Callable[[str], None] = lambda line: None,
) -> Report:
    """Import the original's database rows and session files into Cindy; return the report.

    Steps: match the agents; import each table row by row (one bad row is reported, the rest go on);
    import each agent's session file. A dry run does all of it inside a transaction that is rolled
    back, so its report is exactly what a real run would report. `source_timezone` is the zone of the
    original's server: the original wrote local times in it for agents without an "Agent Timezone".
    """
    try:
        source_zone = ZoneInfo(source_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"--source-timezone {source_timezone!r}: not an IANA zone (e.g. America/Los_Angeles)"
        ) from None
    report = Report(dry_run=dry_run)
    matcher = AgentMatcher.build(names=agent_names, state_dir=state_dir)
    with transaction.atomic():
        if mysql_url:
            _import_tables(
                mysql_url=mysql_url,
                matcher=matcher,
                report=report,
                progress=progress,
                source_zone=source_zone,
            )
        _describe_agents(matcher, report)
        for agent in matcher.agents:
            if state_dir is not None:
                report.sessions.append(
                    session_import(agent=agent, matcher=matcher, quiet_seconds=quiet_seconds)
                )
        if dry_run:
            transaction.set_rollback(True)
    return report


def _import_tables(
    *, mysql_url: str, matcher: AgentMatcher, report: Report, progress, source_zone: ZoneInfo
) -> None:
    conn = connect(mysql_url)
    try:
        tables = existing_tables(conn)
        for importer_class in IMPORTERS:
            table_report = report.table(importer_class.table)
            if importer_class.table not in tables:
                if importer_class.table == "curated_memories":
                    del report.tables["curated_memories"]  # renamed to notes long ago; absence is normal
                else:
                    table_report.present = False
                continue
            total = count_rows(conn, importer_class.table)
            importer = importer_class(
                matcher=matcher,
                report=table_report,
                source_zone=source_zone,
                server_offset=conn.cw_server_offset,
            )
            for done, row in enumerate(
                iter_rows(conn, importer_class.table, order_by=importer_class.order_by), 1
            ):
                importer.run_row(row)
                if total > PROGRESS_EVERY and done % PROGRESS_EVERY == 0:
                    progress(f"{importer_class.table}: {done}/{total}")
        for table, reason in NOT_IMPORTED.items():
            if table in tables:
                report.not_imported.append(f"{table} ({count_rows(conn, table)} rows): {reason}")
            else:
                report.not_imported.append(f"{table}: not in the source database (older installation)")
        known = {importer.table for importer in IMPORTERS} | set(NOT_IMPORTED)
        for table in sorted(tables - known):
            report.not_imported.append(
                f"{table} ({count_rows(conn, table)} rows): not imported: not a table of the original's schema "
                "that Cindy knows"
            )
    finally:
        conn.close()


def _describe_agents(matcher: AgentMatcher, report: Report) -> None:
    for agent in matcher.agents:
        own_id = matcher.own_id(agent)
        found = matcher.match(own_id) if own_id else None
        if found and found.agent.pk == agent.pk:
            report.agent_lines.append(f"{agent.name}: Telegram id {own_id}, matched by {found.rule}")
        else:
            report.agent_lines.append(
                f"{agent.name}: no Telegram id known (no login recorded, no 'Agent Telegram ID', no session "
                f"entry with its phone): its rows cannot be matched"
            )
