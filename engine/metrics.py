"""Prometheus metrics, computed from the database when `/metrics` is scraped.

Gateways and task workers write everything they do to the database already (messages, task nodes,
LLM calls, activity events, leases, health rows), so the web process reads the whole installation's
state from there at scrape time, whichever process did the work and however many run: nothing is
kept in memory, and nothing is lost when a process restarts. Each family below is one aggregate
query.

Counters (`*_total`) count the rows still stored; the LLM families add the daily totals of calls
pruned by retention (engine/retention.py), so they keep growing. The message, turn and activity
counters drop when retention deletes rows, which Prometheus reads as a counter reset (`rate()` and
`increase()` handle it). Histograms are cumulative over the stored LLM calls. The reply latency is a
summary: its quantiles cover the last REPLY_WINDOW_SECONDS, its count and sum the stored replies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal

from django.db.models import Count, DurationField, F, Min, OuterRef, Q, Subquery, Sum
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from cindy_site.clock import now

#: LLM call latency buckets, in seconds.
LLM_LATENCY_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
#: The reply latency quantiles cover replies finished within this window.
REPLY_WINDOW_SECONDS = 3600
#: Activity kinds counted as errors.
ERROR_KINDS = ("node_failed", "node_retried", "agent_error", "policy_refused")
#: Graph triggers that answer someone's message: their first send is a reply.
REPLY_TRIGGERS = ("message", "new_conversation")
#: The token counts of an LLM call (its `<kind>_tokens` fields), each a `type` of cindy_llm_tokens.
TOKEN_KINDS = ("input", "cached", "cache_write", "output", "thinking")


def _name(value: str | None) -> str:
    return value or ""


def _quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile of sorted `values`."""
    rank = max(int(-(-q * len(values) // 1)) - 1, 0)
    return values[min(rank, len(values) - 1)]


class DatabaseCollector(Collector):
    """Every `cindy_*` family, read from the database at collect time."""

    def __init__(self, *, at: dt.datetime | None = None) -> None:
        self.at = at

    def collect(self) -> Iterator[Metric]:
        at = self.at or now()
        yield self.messages()
        yield self.turns()
        yield from self.llm_calls()
        yield self.llm_latency()
        yield from self.llm_breakers(at)
        yield from self.reply_latency(at)
        yield from self.queue(at)
        yield self.leases(at)
        yield from self.activity()
        yield from self.processes(at)

    @staticmethod
    def messages() -> Metric:
        from conversations.models import Message

        family = CounterMetricFamily(
            "cindy_messages",
            "Messages stored, per agent and direction (in: received; out: sent by the agent)",
            labels=["agent", "direction"],
        )
        rows = (
            Message.objects.filter(is_service=False)
            .values("conversation__agent__name", "is_agent")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            direction = "out" if row["is_agent"] else "in"
            family.add_metric([row["conversation__agent__name"], direction], row["n"])
        return family

    @staticmethod
    def turns() -> Metric:
        from conversations.models import NodeKind, NodeStatus, TaskNode

        family = CounterMetricFamily(
            "cindy_turns",
            "Planning turns finished, per agent and outcome (done, failed, cancelled)",
            labels=["agent", "outcome"],
        )
        finished = (NodeStatus.DONE, NodeStatus.FAILED, NodeStatus.CANCELLED)
        rows = (
            TaskNode.objects.filter(kind=NodeKind.RECEIVED, status__in=finished)
            .values("agent__name", "status")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            family.add_metric([row["agent__name"], row["status"]], row["n"])
        return family

    @staticmethod
    def llm_calls() -> Iterator[Metric]:
        from llm.models import LLMCall, LLMUsageDaily

        calls = CounterMetricFamily(
            "cindy_llm_calls",
            "LLM calls, per agent, provider, model, purpose and status",
            labels=["agent", "provider", "model", "purpose", "status"],
        )
        tokens = CounterMetricFamily(
            "cindy_llm_tokens",
            "LLM tokens, per agent, provider, model and type (input, cached, cache_write, output, thinking)",
            labels=["agent", "provider", "model", "type"],
        )
        cost = CounterMetricFamily(
            "cindy_llm_cost_usd",
            "LLM cost in USD, per agent, provider and model",
            labels=["agent", "provider", "model"],
        )
        usage = {kind: Sum(f"{kind}_tokens") for kind in TOKEN_KINDS} | {"cost": Sum("cost")}
        rows = (
            LLMCall.objects.values("agent__name", "provider", "model", "purpose", "status")
            .annotate(n=Count("id"), **usage)
            .order_by()
        )
        # Calls pruned by retention live on as daily totals: counted here, so the counters keep growing.
        pruned = (
            LLMUsageDaily.objects.values("agent__name", "provider", "model")
            .annotate(n=Sum("calls"), **usage)
            .order_by()
        )
        by_model: dict[tuple[str, str, str], dict[str, Decimal | int]] = {}

        def add_usage(row: dict) -> tuple[str, str, str]:
            key = (_name(row["agent__name"]), row["provider"], row["model"])
            sums = by_model.setdefault(key, dict.fromkeys(usage, 0))
            for field in sums:
                sums[field] += row[field] or 0
            return key

        for row in rows:
            calls.add_metric([*add_usage(row), row["purpose"], row["status"]], row["n"])
        for row in pruned:
            calls.add_metric([*add_usage(row), "", "pruned"], row["n"] or 0)
        for key, sums in sorted(by_model.items()):
            for kind in TOKEN_KINDS:
                tokens.add_metric([*key, kind], sums[kind])
            cost.add_metric(list(key), float(sums["cost"]))
        yield calls
        yield tokens
        yield cost

    @staticmethod
    def llm_breakers(at: dt.datetime) -> Iterator[Metric]:
        """Each LLM route's circuit breaker (llm/breakers.py): a route without a row is closed and
        not listed. An open breaker whose cool-down is over reads as open until a turn probes it."""
        from llm.models import RouteBreaker

        state = GaugeMetricFamily(
            "cindy_llm_breaker_state",
            "LLM route circuit breakers: 1 for the state each route is in (closed, open, probing)",
            labels=["provider", "model", "state"],
        )
        failures = GaugeMetricFamily(
            "cindy_llm_breaker_failures",
            "LLM route circuit breakers: failed calls in a row, per provider and model",
            labels=["provider", "model"],
        )
        for row in RouteBreaker.objects.order_by("provider", "model"):
            for choice in RouteBreaker.State.values:
                state.add_metric([row.provider, row.model, choice], 1 if row.state == choice else 0)
            failures.add_metric([row.provider, row.model], row.failures)
        yield state
        yield failures

    @staticmethod
    def llm_latency() -> Metric:
        from llm.models import LLMCall

        family = HistogramMetricFamily(
            "cindy_llm_latency_seconds",
            "LLM call latency (finished calls), per provider and model",
            labels=["provider", "model"],
        )
        buckets = {
            f"le_{i}": Count("id", filter=Q(latency_ms__lte=b * 1000))
            for i, b in enumerate(LLM_LATENCY_BUCKETS)
        }
        rows = (
            LLMCall.objects.exclude(status__in=(LLMCall.Status.PENDING, LLMCall.Status.INTERRUPTED))
            .values("provider", "model")
            .annotate(n=Count("id"), total_ms=Sum("latency_ms"), **buckets)
            .order_by("provider", "model")
        )
        for row in rows:
            counts = [(str(b), row[f"le_{i}"]) for i, b in enumerate(LLM_LATENCY_BUCKETS)]
            family.add_metric(
                [row["provider"], row["model"]],
                buckets=[*counts, ("+Inf", row["n"])],
                sum_value=(row["total_ms"] or 0) / 1000,
            )
        return family

    @staticmethod
    def reply_latency(at: dt.datetime) -> Iterator[Metric]:
        """From a message's turn starting (its graph made at ingest) to the agent's first send of it.

        A summary, as Prometheus' format has it: the quantiles cover the replies of the last
        REPLY_WINDOW_SECONDS (as client libraries' summaries cover a sliding window), while `_count`
        and `_sum` are cumulative over the stored replies, so `rate(_sum) / rate(_count)` is the mean.
        """
        from conversations.models import NodeKind, NodeStatus, TaskGraph, TaskNode

        latency = Metric(
            "cindy_reply_latency_seconds",
            f"From a message arriving to the agent's reply, per agent (quantiles 0.5, 0.95 and 1 over "
            f"the replies of the last {REPLY_WINDOW_SECONDS} s; count and sum over the stored replies)",
            "summary",
        )
        replies = GaugeMetricFamily(
            "cindy_replies_recent",
            f"Replies sent in the last {REPLY_WINDOW_SECONDS} s, per agent",
            labels=["agent"],
        )
        sends = TaskNode.objects.filter(kind=NodeKind.SEND, status=NodeStatus.DONE)
        rows = (
            sends.filter(
                finished__gte=at - dt.timedelta(seconds=REPLY_WINDOW_SECONDS),
                graph__trigger__in=REPLY_TRIGGERS,
            )
            .values("graph_id", "agent__name", "graph__created")
            .annotate(first=Min("finished"))
            .order_by()
        )
        per_agent: dict[str, list[float]] = {}
        for row in rows:
            seconds = max((row["first"] - row["graph__created"]).total_seconds(), 0.0)
            per_agent.setdefault(row["agent__name"], []).append(seconds)
        for agent, values in sorted(per_agent.items()):
            values.sort()
            for q in (0.5, 0.95, 1.0):
                latency.add_sample(latency.name, {"agent": agent, "quantile": str(q)}, _quantile(values, q))
            replies.add_metric([agent], len(values))
        # Count and sum over every stored reply, in the database: a month of graphs is not read here.
        first_send = (
            sends.filter(graph=OuterRef("pk")).order_by().values("graph").annotate(first=Min("finished"))
        )
        totals = (
            TaskGraph.objects.filter(trigger__in=REPLY_TRIGGERS)
            .annotate(first=Subquery(first_send.values("first")))
            .filter(first__isnull=False)
            .values("conversation__agent__name")
            .annotate(n=Count("id"), total=Sum(F("first") - F("created"), output_field=DurationField()))
            .order_by("conversation__agent__name")
        )
        for row in totals:
            agent = row["conversation__agent__name"]
            total = row["total"].total_seconds() if row["total"] else 0.0
            latency.add_sample(f"{latency.name}_count", {"agent": agent}, row["n"])
            latency.add_sample(f"{latency.name}_sum", {"agent": agent}, max(total, 0.0))
        yield latency
        yield replies

    @staticmethod
    def queue(at: dt.datetime) -> Iterator[Metric]:
        from conversations.models import NodeStatus, TaskNode

        depth = GaugeMetricFamily(
            "cindy_queue_depth",
            "Task nodes waiting (pending) or in hand (running), per kind",
            labels=["kind", "status"],
        )
        oldest = GaugeMetricFamily(
            "cindy_oldest_pending_node_age_seconds",
            "How long the oldest pending node that may run now has been due, per kind",
            labels=["kind"],
        )
        rows = (
            TaskNode.objects.filter(status__in=(NodeStatus.PENDING, NodeStatus.RUNNING))
            .values("kind", "status")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            depth.add_metric([row["kind"], row["status"]], row["n"])
        due = (
            TaskNode.objects.filter(status=NodeStatus.PENDING, not_before__lte=at)
            .values("kind")
            .annotate(first=Min("not_before"))
            .order_by()
        )
        for row in due:
            oldest.add_metric([row["kind"]], max((at - row["first"]).total_seconds(), 0.0))
        yield depth
        yield oldest

    @staticmethod
    def leases(at: dt.datetime) -> Metric:
        from agents.models import Agent, AgentLease

        family = GaugeMetricFamily(
            "cindy_agent_driven",
            "1 when a gateway holds the agent's live lease (holder: that gateway), 0 for an enabled, "
            "not stopped agent that no gateway drives",
            labels=["agent", "holder"],
        )
        held = dict(AgentLease.objects.filter(expires_at__gte=at).values_list("agent_id", "holder"))
        for pk, name, disabled, stopped in Agent.objects.values_list(
            "pk", "name", "disabled", "stopped"
        ).order_by("name"):
            if pk in held:
                family.add_metric([name, held[pk]], 1)
            elif not (disabled or stopped):
                family.add_metric([name, ""], 0)
        return family

    @staticmethod
    def activity() -> Iterator[Metric]:
        from conversations.models import ActivityEvent

        floods = CounterMetricFamily(
            "cindy_flood_waits", "Telegram flood waits that deferred an action, per agent", labels=["agent"]
        )
        errors = CounterMetricFamily(
            "cindy_errors",
            "Errors in the activity stream, per agent and kind (node_failed, node_retried, agent_error, "
            "policy_refused)",
            labels=["agent", "kind"],
        )
        rows = (
            ActivityEvent.objects.filter(
                Q(kind__in=ERROR_KINDS)
                | Q(kind=ActivityEvent.Kind.NODE_DEFERRED, summary__contains=": flood wait: ")
            )
            .values("agent__name", "kind")
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            agent = _name(row["agent__name"])
            if row["kind"] == ActivityEvent.Kind.NODE_DEFERRED:
                floods.add_metric([agent], row["n"])
            else:
                errors.add_metric([agent, row["kind"]], row["n"])
        yield floods
        yield errors

    @staticmethod
    def processes(at: dt.datetime) -> Iterator[Metric]:
        from engine.health import host_name, process_problems
        from engine.models import ProcessHeartbeat

        up = GaugeMetricFamily(
            "cindy_process_up",
            "1 when a gateway or task worker pool reports and has no problem (manage.py health), else 0",
            labels=["kind", "name"],
        )
        age = GaugeMetricFamily(
            "cindy_process_heartbeat_age_seconds",
            "Seconds since a gateway or task worker pool last wrote its health row",
            labels=["kind", "name"],
        )
        local = host_name()
        for row in ProcessHeartbeat.objects.all():
            up.add_metric([row.kind, row.name], 0 if process_problems(row, at=at, local_host=local) else 1)
            age.add_metric([row.kind, row.name], max((at - row.beat_at).total_seconds(), 0.0))
        yield up
        yield age
