"""Health: what each gateway and task worker pool reports about itself, and the installation's state.

Each long-running process writes its `ProcessHeartbeat` row every CINDY_LEASE_SECONDS / 3
(`process_beat`): the gateway from its lease heartbeat task (engine/heartbeat.py), the worker pool
from its guard loop (engine/cluster.py). `installation_health` reads those rows, the agent leases and
the database and Redis themselves, and lists what is down, each with the reason an operator needs:

- the database or Redis (when REDIS_URL is set) does not answer;
- a process has not written its row for CINDY_LEASE_SECONDS (stopped, hung, cut off from the
  database), or, on this host, its pid is gone;
- a gateway's loop has not finished a pass for CINDY_TICK_STALL_SECONDS (the tick is stalled);
- a gateway holding agents has not renewed their leases for CINDY_LEASE_SECONDS;
- a gateway's planning watchdog sees planning that no task worker takes (engine/watchdog.py);
- gateways run but no task worker pool does;
- an enabled, not stopped agent has no live lease: no gateway drives it.

`manage.py health`, the web process's `/health/ready` and the dashboard's alerts use it.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection

from cindy_site.clock import now
from engine.models import ProcessHeartbeat

Kind = ProcessHeartbeat.Kind


def beat_interval() -> float:
    """Seconds between two heartbeats of a process: three chances within the staleness limit."""
    return settings.CINDY_LEASE_SECONDS / 3


def host_name() -> str:
    return socket.gethostname()


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs on this host (a stopped process runs; a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


# --- writing ----------------------------------------------------------------------------------


def process_beat(*, name: str, kind: str, pid: int | None = None, **state: object) -> None:
    """Write this process's row: `state` holds the ProcessHeartbeat fields it reports."""
    when = now()
    pid = pid if pid is not None else os.getpid()
    fields = {"kind": kind, "host": host_name(), "pid": pid, "beat_at": when, **state}
    updated = ProcessHeartbeat.objects.filter(name=name).update(**fields)
    if not updated:
        ProcessHeartbeat.objects.create(name=name, started_at=when, **fields)


def process_forget(*, name: str) -> int:
    deleted, _ = ProcessHeartbeat.objects.filter(name=name).delete()
    return deleted


def processes_forget_gone(*, kind: str) -> list[str]:
    """Delete the rows of processes of `kind` on this host whose pid no longer runs (a process killed
    before it could remove its own row); returns their names."""
    gone = [
        name
        for name, pid in ProcessHeartbeat.objects.filter(kind=kind, host=host_name()).values_list(
            "name", "pid"
        )
        if pid != os.getpid() and not pid_alive(pid)
    ]
    ProcessHeartbeat.objects.filter(name__in=gone).delete()
    return gone


def gateway_forget(*, gateway_id: str) -> int:
    """A gateway stopping cleanly: its row, and those of the worker pools it started, go."""
    deleted, _ = ProcessHeartbeat.objects.filter(name=gateway_id).delete()
    served, _ = ProcessHeartbeat.objects.filter(kind=Kind.WORKERS, serves=gateway_id).delete()
    return deleted + served


def redis_problem() -> str:
    """Why Redis does not answer a PING within 2 s, or '' (also when REDIS_URL is not set)."""
    if not settings.REDIS_URL:
        return ""
    import redis

    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:
        return f"Redis at REDIS_URL does not answer: {exc}"
    return ""


def database_problem() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:
        return f"the database does not answer: {exc}"
    return ""


# --- reading ----------------------------------------------------------------------------------


@dataclass
class Health:
    problems: list[str] = field(default_factory=list)
    processes: list[ProcessHeartbeat] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _ago(at: dt.datetime, when: dt.datetime) -> str:
    return f"{(at - when).total_seconds():.0f} s ago"


def process_problems(row: ProcessHeartbeat, *, at: dt.datetime, local_host: str) -> list[str]:
    """What is wrong with one process, from its row."""
    label = f"{row.get_kind_display().lower()} {row.name} (pid {row.pid} on {row.host})"
    stale = dt.timedelta(seconds=settings.CINDY_LEASE_SECONDS)
    if row.host == local_host and not pid_alive(row.pid):
        return [
            f"{label} is gone: the process no longer runs (last heartbeat {_ago(at, row.beat_at)}); "
            f"restart it, or `manage.py health --forget {row.name}` if it was retired"
        ]
    if at - row.beat_at > stale:
        return [
            f"{label}: no heartbeat for {(at - row.beat_at).total_seconds():.0f} s (limit "
            f"CINDY_LEASE_SECONDS={settings.CINDY_LEASE_SECONDS}): the process is stopped, hung or "
            "cannot reach the database"
        ]
    problems = [f"{label}: {row.problem}"] if row.problem else []
    if row.kind == Kind.GATEWAY:
        tick_limit = dt.timedelta(seconds=settings.CINDY_TICK_STALL_SECONDS)
        if row.pass_at is None or at - row.pass_at > tick_limit:
            since = _ago(at, row.pass_at) if row.pass_at else f"never, started {_ago(at, row.started_at)}"
            if row.pass_at is not None or at - row.started_at > tick_limit:
                problems.append(
                    f"{label}: tick stalled: its loop last finished a pass {since} (limit "
                    f"CINDY_TICK_STALL_SECONDS={settings.CINDY_TICK_STALL_SECONDS})"
                )
        if row.held and (row.renewed_at is None or at - row.renewed_at > stale):
            since = _ago(at, row.renewed_at) if row.renewed_at else "never"
            problems.append(f"{label}: the leases of its {row.held} agent(s) were last renewed {since}")
        if row.stalled_since is not None:
            problems.append(
                f"{label}: planning stalled since {row.stalled_since:%Y-%m-%d %H:%M:%S} UTC: no task "
                f"worker has taken its planning tasks within CINDY_PLANNING_STALL_SECONDS="
                f"{settings.CINDY_PLANNING_STALL_SECONDS}; check the task workers"
            )
    return problems


def process_alerts(*, at: dt.datetime | None = None) -> list[str]:
    """The dashboard's alerts: what is wrong with the gateways and task worker pools, from their rows
    alone (one query; the agents' own state shows in the agents table)."""
    at = at or now()
    rows = list(ProcessHeartbeat.objects.all())
    local = host_name()
    alerts = [problem for row in rows for problem in process_problems(row, at=at, local_host=local)]
    kinds = {row.kind for row in rows}
    if Kind.GATEWAY in kinds and Kind.WORKERS not in kinds:
        alerts.append(NO_WORKERS)
    return alerts


NO_WORKERS = (
    "no task worker pool is running: planning does not happen; start `manage.py runworkers`, "
    "or run `manage.py runagents` without --no-workers"
)


def breaker_problems(*, at: dt.datetime) -> list[str]:
    """The LLM routes whose circuit breaker is open or being probed (llm/breakers.py): turns skip them
    and use their fallback routes, or wait when they have none."""
    from llm.models import RouteBreaker

    problems = []
    for row in RouteBreaker.objects.exclude(state=RouteBreaker.State.CLOSED).order_by("provider", "model"):
        when = (
            "a turn is probing it"
            if row.state == RouteBreaker.State.PROBING
            else f"open until {row.open_until:%Y-%m-%d %H:%M:%S} UTC"
            + (", then one turn probes it" if row.open_until and row.open_until > at else ", due for a probe")
        )
        problems.append(
            f"LLM route {row.provider}/{row.model}: circuit breaker {when}, after {row.failures} failed "
            f"calls in a row (last error: {row.last_error[:300]}); turns use their fallback routes "
            "(# LLM Fallback, CINDY_LLM_FALLBACK) or wait"
        )
    return problems


def installation_health(*, at: dt.datetime | None = None) -> Health:
    """Every gateway's and worker pool's state, and what is down (empty when all is well)."""
    from agents.models import Agent, AgentLease

    health = Health()
    problem = database_problem()
    if problem:
        health.problems.append(problem)
        return health
    problem = redis_problem()
    if problem:
        health.problems.append(problem)
    at = at or now()
    local = host_name()
    health.processes = list(ProcessHeartbeat.objects.all())
    for row in health.processes:
        health.problems.extend(process_problems(row, at=at, local_host=local))
    gateways = [r for r in health.processes if r.kind == Kind.GATEWAY]
    if gateways and not any(r.kind == Kind.WORKERS for r in health.processes):
        health.problems.append(NO_WORKERS)
    health.problems.extend(breaker_problems(at=at))
    live = set(AgentLease.objects.filter(expires_at__gte=at).values_list("agent_id", flat=True))
    for name in (
        Agent.objects.filter(disabled=False, stopped=False)
        .exclude(pk__in=live)
        .values_list("name", flat=True)
    ):
        health.problems.append(
            f"agent {name}: no gateway drives it (no live lease)"
            + ("" if gateways else ": no gateway is running; start `manage.py runagents`")
        )
    return health
