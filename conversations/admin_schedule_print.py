"""The printable schedule of one agent: every activity over a range of days, on a plain page that
prints as a table (the admin's header, sidebar and links are left out)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from agents.access import visible_to
from agents.models import Agent
from agents.schedule import _zone
from cindy_site.clock import now
from memory.models import ScheduleEntry

# The longest range one page prints: a long list is still one table, but a typo in a year should not
# print a decade of empty days.
MAX_DAYS = 62


@dataclass(frozen=True)
class PrintRow:
    start: str
    end: str
    activity: str
    description: str
    responsiveness: int


def _offset(zone: dt.tzinfo, at: dt.datetime) -> str:
    """`+02:00` style offset of `zone` at `at`."""
    minutes = int((at.astimezone(zone).utcoffset() or dt.timedelta()).total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _day(request: HttpRequest, key: str) -> dt.date | None:
    raw = request.GET.get(key, "").strip()
    if not raw:
        return None
    return dt.date.fromisoformat(raw)


def schedule_print_view(request: HttpRequest, agent_id: int) -> HttpResponse:
    """The agent's schedule from `from` to `to` (days in its timezone, both included).

    Without `from`, it starts today; without `to`, it ends with the last planned entry (at most
    MAX_DAYS days on). Each row's start shows its date; its end shows only the time when it ends on
    the same day.
    """
    agent = get_object_or_404(visible_to(request.user, Agent.objects.all()), pk=agent_id)
    zone = _zone(agent.timezone)
    moment = now()
    try:
        first = _day(request, "from") or moment.astimezone(zone).date()
        last = _day(request, "to")
    except ValueError as exc:
        return HttpResponseBadRequest(f"from/to: {exc}: give days as YYYY-MM-DD, e.g. ?from=2026-11-26")
    start = dt.datetime.combine(first, dt.time(0), tzinfo=zone)
    if last is None:
        final = (
            ScheduleEntry.objects.filter(agent=agent, end__gt=start)
            .order_by("-end")
            .values_list("end", flat=True)
        ).first()
        last = (final - dt.timedelta(microseconds=1)).astimezone(zone).date() if final else first
        last = min(last, first + dt.timedelta(days=MAX_DAYS - 1))
    if last < first:
        return HttpResponseBadRequest(f"to ({last}) is before from ({first}): give a later to")
    if (last - first).days >= MAX_DAYS:
        return HttpResponseBadRequest(
            f"{first} to {last} is {(last - first).days + 1} days: print at most {MAX_DAYS} at a time"
        )
    end = dt.datetime.combine(last + dt.timedelta(days=1), dt.time(0), tzinfo=zone)
    rows = []
    for entry in ScheduleEntry.objects.filter(agent=agent, start__lt=end, end__gt=start).order_by("start"):
        begin, finish = entry.start.astimezone(zone), entry.end.astimezone(zone)
        same_day = (finish - dt.timedelta(microseconds=1)).date() == begin.date()
        rows.append(
            PrintRow(
                start=f"{begin:%a %Y-%m-%d %H:%M}",
                end=f"{finish:%H:%M}" if same_day else f"{finish:%a %Y-%m-%d %H:%M}",
                activity=entry.activity,
                description=entry.description,
                responsiveness=entry.responsiveness,
            )
        )
    context = {
        "agent": agent,
        "title": f"Schedule — {agent.name}",
        "zone": getattr(zone, "key", "UTC"),
        "offset": _offset(zone, moment),
        "first": first,
        "last": last,
        "rows": rows,
        "printed": moment.astimezone(zone),
    }
    return TemplateResponse(request, "admin/initiative/schedule_print.html", context)
