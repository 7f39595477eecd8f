"""What must not happen in a scenario: nodes failed or retried, tasks dropped or cancelled, graphs
deleted or failed, and WARNING or ERROR lines in the processes' logs that the scenario does not expect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from engine.tests.processes import ChildDatabase

#: Activity kinds that mean something went wrong with a turn.
TROUBLE_EVENTS = ("node_failed", "node_retried", "graph_deleted", "policy_refused", "agent_error")
#: Activity summaries (prefixes) that mean a task of the model's reply was dropped or changed.
DROPPED_SUMMARIES = ("invalid task from the LLM", "task adjusted")
_LOG_PROBLEM = re.compile(r"^\S+ \S+ (?:WARNING|ERROR|CRITICAL) |^Traceback ", re.MULTILINE)


@dataclass
class Health:
    events: dict[str, int] = field(default_factory=dict)  # trouble event kind -> count
    dropped: list[str] = field(default_factory=list)  # summaries of dropped or adjusted tasks
    nodes: dict[str, int] = field(default_factory=dict)  # node status failed/cancelled -> count
    graphs: dict[str, int] = field(default_factory=dict)  # graph status failed/cancelled -> count
    log_lines: list[str] = field(default_factory=list)  # unexpected WARNING/ERROR lines
    refusals: list[str] = field(default_factory=list)  # what the refusals and failures said

    @property
    def problems(self) -> list[str]:
        found = [f"{count} {kind} event(s)" for kind, count in self.events.items() if count]
        found += self.refusals
        found += [f"dropped: {summary}" for summary in self.dropped]
        found += [f"{count} node(s) {status}" for status, count in self.nodes.items() if count]
        found += [f"{count} graph(s) {status}" for status, count in self.graphs.items() if count]
        found += [f"log: {line}" for line in self.log_lines]
        return found


def health(
    db: ChildDatabase,
    conversation_ids: Iterable[int],
    log: str,
    expected: Iterable[str] = (),
    refusals: Iterable[str] = (),
) -> Health:
    """Count what went wrong in these conversations, and the log lines no `expected` substring names.

    A policy refusal whose summary contains one of `refusals` (the texts a scenario's turns expect in
    their activity lines) is the product at work, not trouble."""
    ids = ", ".join(str(i) for i in conversation_ids) or "NULL"
    report = Health()
    kinds = ", ".join(f"'{k}'" for k in TROUBLE_EVENTS)
    for kind, count in db.query(
        f"SELECT kind, COUNT(*) FROM conversations_activityevent WHERE conversation_id IN ({ids}) "
        f"AND kind IN ({kinds}) GROUP BY kind"
    ):
        report.events[kind] = count
    report.refusals = [
        f"{kind}: {summary}"
        for kind, summary in db.query(
            "SELECT kind, summary FROM conversations_activityevent WHERE conversation_id IN "
            f"({ids}) AND kind IN ('policy_refused', 'agent_error', 'node_failed') ORDER BY id"
        )
    ]
    likes = " OR ".join(f"summary LIKE '{prefix}%'" for prefix in DROPPED_SUMMARIES)
    report.dropped = [
        row[0]
        for row in db.query(
            f"SELECT summary FROM conversations_activityevent WHERE conversation_id IN ({ids}) AND ({likes}) "
            "ORDER BY id"
        )
    ]
    # A plan replaced before it read the chat (a message that came while it waited: a burst, or a
    # message said while the agent waited for the typing) is the product at work, not trouble.
    for status, count in db.query(
        f"SELECT status, COUNT(*) FROM conversations_tasknode WHERE conversation_id IN ({ids}) "
        "AND status IN ('failed', 'cancelled') "
        "AND NOT (status = 'cancelled' AND kind = 'received' AND started IS NULL) GROUP BY status"
    ):
        report.nodes[status] = count
    for status, count in db.query(
        f"SELECT status, COUNT(*) FROM conversations_taskgraph g WHERE conversation_id IN ({ids}) "
        "AND status IN ('failed', 'cancelled') AND NOT (status = 'cancelled' AND NOT EXISTS (SELECT 1 "
        "FROM conversations_tasknode n WHERE n.graph_id = g.id AND (n.kind != 'received' OR n.started "
        "IS NOT NULL))) GROUP BY status"
    ):
        report.graphs[status] = count
    report.log_lines = unexpected_log_lines(log, expected)
    return without_expected_refusals(report, refusals)


def without_expected_refusals(report: Health, texts: Iterable[str]) -> Health:
    """The report without the policy refusals whose summary contains one of `texts`."""
    texts = [t for t in texts if t]
    expected = [
        line
        for line in report.refusals
        if line.startswith("policy_refused: ") and any(t in line for t in texts)
    ]
    report.refusals = [line for line in report.refusals if line not in expected]
    if expected:
        report.events["policy_refused"] = report.events.get("policy_refused", 0) - len(expected)
    return report


def unexpected_log_lines(log: str, expected: Iterable[str] = ()) -> list[str]:
    """The WARNING/ERROR/CRITICAL lines (and tracebacks) of `log` that no `expected` substring names."""
    expected = list(expected)
    lines = []
    for match in _LOG_PROBLEM.finditer(log):
        end = log.find("\n", match.start())
        line = log[match.start() : end if end >= 0 else len(log)].rstrip()
        if not any(name in line for name in expected):
            lines.append(line)
    return lines
