"""Installation-wide summaries: LLM costs per agent and day, health, and the metrics summary.

Health and metrics are open to every staff token, as `/metrics` is to every signed-in staff user,
but leave out what names an agent the user may not see; costs list only the agents whose LLM calls
the user may see."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Annotated

from django.http import HttpRequest
from ninja import Field, Router, Schema

from agents.access import agents_for
from agents.models import Agent
from api.core import ERRORS
from engine.health import installation_health
from engine.metrics import DatabaseCollector
from llm.costs import daily_costs

router = Router(tags=["summaries"])
MICRO_USD = Decimal("0.000001")
VIEW_COSTS = "llm.view_llmcall"


class AgentCostOut(Schema):
    name: str
    values: list[str] = Field(description="USD per day (six decimals), in the order of `days`")
    total: str


class CostsOut(Schema):
    days: list[dt.date]
    agents: list[AgentCostOut]
    total: str


class ProcessOut(Schema):
    name: str
    kind: str
    host: str
    pid: int
    started_at: dt.datetime
    beat_at: dt.datetime


class HealthOut(Schema):
    ok: bool
    problems: list[str]
    processes: list[ProcessOut]


class SampleOut(Schema):
    name: str
    labels: dict[str, str]
    value: float


class MetricsOut(Schema):
    samples: list[SampleOut]


def _hidden_agents(request: HttpRequest) -> set[str]:
    """The names of the agents the user may not see."""
    visible = agents_for(request.user).values_list("pk", flat=True)
    return set(Agent.objects.exclude(pk__in=visible).values_list("name", flat=True))


def _usd(value: Decimal) -> str:
    """A cost as the LLM call rows keep it: dollars with six decimals (the same on every database)."""
    return f"{Decimal(value).quantize(MICRO_USD):f}"


@router.get("/costs", response={200: CostsOut, **ERRORS}, summary="LLM costs per agent and day")
def costs(request: HttpRequest, days: Annotated[int, Field(ge=1, le=366)] = 14):
    """The agents you may see with their LLM costs (USD) per day of TIME_ZONE, today last."""
    visible = set(agents_for(request.user, VIEW_COSTS).values_list("name", flat=True))
    data = daily_costs(days=days)
    series = [row for row in data["agents"] if row["name"] in visible]
    return {
        "days": data["days"],
        "agents": [
            {"name": row["name"], "values": [_usd(v) for v in row["values"]], "total": _usd(row["total"])}
            for row in series
        ],
        "total": _usd(sum((row["total"] for row in series), start=Decimal("0"))),
    }


@router.get("/health", response={200: HealthOut, **ERRORS}, summary="Health of the installation")
def health(request: HttpRequest):
    """What `manage.py health` reports: each gateway's and worker pool's heartbeat, and what is wrong."""
    report = installation_health()
    hidden = _hidden_agents(request)
    return {
        "ok": report.ok,
        "problems": [p for p in report.problems if not any(p.startswith(f"agent {n}:") for n in hidden)],
        "processes": [
            {
                "name": row.name,
                "kind": row.kind,
                "host": row.host,
                "pid": row.pid,
                "started_at": row.started_at,
                "beat_at": row.beat_at,
            }
            for row in report.processes
        ],
    }


@router.get("/metrics", response={200: MetricsOut, **ERRORS}, summary="The metrics summary")
def metrics(request: HttpRequest):
    """The samples `/metrics` exposes for Prometheus (messages, turns, LLM calls, queue, leases...), as JSON."""
    hidden = _hidden_agents(request)
    samples = [
        {"name": sample.name, "labels": dict(sample.labels), "value": sample.value}
        for family in DatabaseCollector().collect()
        for sample in family.samples
        if math.isfinite(sample.value) and sample.labels.get("agent") not in hidden
    ]
    return {"samples": samples}
