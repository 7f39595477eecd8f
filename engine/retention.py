"""Retention: old rows are deleted in small batches, each in a short transaction of its own.

Kinds and their settings (days; 0 keeps them for good):

- `activity`: activity events older than CINDY_RETAIN_ACTIVITY_DAYS (30);
- `llm_calls`: LLM calls older than CINDY_RETAIN_LLM_CALLS_DAYS (90), added first to `LLMUsageDaily`
  (per day in TIME_ZONE, agent, provider and model) in the same transaction, so the dashboard's cost
  chart reads the same after pruning; calls still pending are kept;
- `sandbox_updates`: sandbox update rows older than CINDY_RETAIN_SANDBOX_UPDATES_DAYS (7), long since
  delivered to the gateways (a sandbox gateway down for longer misses them);
- `graphs`: finished (done, cancelled, failed) task graphs finished before CINDY_RETAIN_GRAPHS_DAYS
  (30), with their nodes.

Each batch picks at most CINDY_PRUNE_BATCH ids walking the primary key from where the last batch
ended (old rows come first, so the walk stops early), then deletes them by id: the write lock is held
for one batch only. The task workers' sentinel runs `retention_run` in its housekeeping (every 30 s, for at most
HOUSEKEEPING_BUDGET_SECONDS), and `manage.py prune` runs it to the end or, with `--dry-run`, counts.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import F, QuerySet

from cindy_site.clock import now
from conversations.models import ActivityEvent, TaskGraph
from llm.models import LLMCall, LLMUsageDaily
from sandbox.models import SandboxUpdate

#: How long the sentinel's housekeeping may prune at a time.
HOUSEKEEPING_BUDGET_SECONDS = 1.0


@dataclass
class PruneReport:
    deleted: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    #: The longest single batch (its transaction), in seconds.
    longest_batch: float = 0.0

    def describe(self) -> str:
        counts = ", ".join(f"{kind} {n}" for kind, n in self.deleted.items())
        return f"{counts} ({self.batches} batches, longest {self.longest_batch * 1000:.0f} ms)"


def _days(kind: str) -> int:
    return {
        "activity": settings.CINDY_RETAIN_ACTIVITY_DAYS,
        "llm_calls": settings.CINDY_RETAIN_LLM_CALLS_DAYS,
        "sandbox_updates": settings.CINDY_RETAIN_SANDBOX_UPDATES_DAYS,
        "graphs": settings.CINDY_RETAIN_GRAPHS_DAYS,
    }[kind]


def _expired(kind: str, cutoff: dt.datetime) -> QuerySet:
    if kind == "activity":
        return ActivityEvent.objects.filter(created__lt=cutoff)
    if kind == "llm_calls":
        return LLMCall.objects.filter(created__lt=cutoff).exclude(status=LLMCall.Status.PENDING)
    if kind == "sandbox_updates":
        return SandboxUpdate.objects.filter(created__lt=cutoff)
    finished = (TaskGraph.Status.DONE, TaskGraph.Status.CANCELLED, TaskGraph.Status.FAILED)
    return TaskGraph.objects.filter(status__in=finished, finished__lt=cutoff)


KINDS = ("activity", "llm_calls", "sandbox_updates", "graphs")


def cutoffs(*, at: dt.datetime | None = None) -> dict[str, dt.datetime]:
    """Each kind with a retention period, and the time before which its rows go."""
    at = at or now()
    return {kind: at - dt.timedelta(days=_days(kind)) for kind in KINDS if _days(kind) > 0}


def prune_counts(*, at: dt.datetime | None = None) -> dict[str, int]:
    """What a prune would delete now, per kind (`manage.py prune --dry-run`)."""
    return {kind: _expired(kind, cutoff).count() for kind, cutoff in cutoffs(at=at).items()}


#: The LLMCall fields summed into LLMUsageDaily (besides the count of calls).
USAGE_SUMS = (
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "output_tokens",
    "thinking_tokens",
    "cost",
)
#: Of those, what Gemini explicit caches served (cached tokens) and cost (calls of purpose `cache`).
CACHE_SUMS = ("explicit_cached_tokens", "cache_cost")


def _usage_add(calls: QuerySet) -> None:
    """Add these LLM calls to the daily usage rows (inside the batch's transaction)."""
    tz = ZoneInfo(settings.TIME_ZONE)
    totals: dict[tuple, dict] = {}
    fields = ("created", "agent_id", "provider", "model", "purpose", "explicit_cache", *USAGE_SUMS)
    for row in calls.values(*fields):
        key = (row["created"].astimezone(tz).date(), row["agent_id"], row["provider"], row["model"])
        sums = totals.setdefault(key, dict.fromkeys(("calls", *USAGE_SUMS, *CACHE_SUMS), 0))
        sums["calls"] += 1
        for name in USAGE_SUMS:
            sums[name] += row[name]
        # What explicit caches served and cost, so the cached share and the saving stay true
        # (llm/cache_share.py).
        if row["purpose"] == LLMCall.Purpose.CACHE:
            sums["cache_cost"] += row["cost"]
        elif row["explicit_cache"]:
            sums["explicit_cached_tokens"] += row["cached_tokens"]
    for (day, agent_id, provider, model), sums in totals.items():
        # agent_id=None matches the calls without an agent (Django filters it as IS NULL).
        rows = LLMUsageDaily.objects.filter(day=day, agent_id=agent_id, provider=provider, model=model)
        if not rows.update(**{name: F(name) + value for name, value in sums.items()}):
            LLMUsageDaily.objects.create(day=day, agent_id=agent_id, provider=provider, model=model, **sums)


def prune_batch(kind: str, *, cutoff: dt.datetime, batch: int, after: int = 0) -> list[int]:
    """Delete up to `batch` expired rows of `kind` with ids above `after`, oldest ids first, in one
    transaction; returns their ids (the next batch starts after the last, so rows kept between the
    expired ones are walked over once per run, not once per batch)."""
    with transaction.atomic():
        expired = _expired(kind, cutoff).filter(pk__gt=after)
        ids = list(expired.order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            return []
        if kind == "llm_calls":
            _usage_add(LLMCall.objects.filter(pk__in=ids))
        expired.model.objects.filter(pk__in=ids).delete()
    return ids


def retention_run(
    *,
    at: dt.datetime | None = None,
    batch: int | None = None,
    budget_seconds: float | None = None,
    on_batch: Callable[[str, int, float], None] | None = None,
) -> PruneReport:
    """Prune every kind batch by batch until nothing has expired or the time budget is spent."""
    batch = batch or settings.CINDY_PRUNE_BATCH
    report = PruneReport()
    started = time.monotonic()
    for kind, cutoff in cutoffs(at=at).items():
        report.deleted[kind] = 0
        after = 0
        while budget_seconds is None or time.monotonic() - started < budget_seconds:
            began = time.monotonic()
            ids = prune_batch(kind, cutoff=cutoff, batch=batch, after=after)
            took = time.monotonic() - began
            if not ids:
                break
            deleted, after = len(ids), ids[-1]
            report.deleted[kind] += deleted
            report.batches += 1
            report.longest_batch = max(report.longest_batch, took)
            if on_batch is not None:
                on_batch(kind, deleted, took)
    return report
