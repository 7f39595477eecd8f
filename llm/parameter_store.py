"""Global parameters an operator tunes at run time: the environment's value, unless the admin stores an
override (`SiteParameter`), which wins from the next turn on, in every process, without a restart.

`cindy_site.parameters.parameter("CINDY_HISTORY_SIZE")` is the one reader. It costs no query: each process
keeps the overrides in memory, and reloads them (one query over a table of at most a dozen rows) where
a unit of work starts:

- a django-q2 worker, before each task it runs (`refresh_before_task`, on django-q2's `pre_execute`
  signal, connected in `llm/apps.py`): a planning turn, a media description, a translation;
- the gateway, at the start of each pass (`engine/gateway.py: run_once`);
- the web process, when the admin saves a value (`parameter_set`, `parameter_reset`), and in the views
  that show them.

The reload parses and validates the stored text exactly as `cindy_site/settings.py` parses the
environment variable; a row that no longer validates (an LLM name that stopped routing) is ignored
with a warning naming it, and the environment's value is used. Secrets (API keys, tokens,
DATABASE_URL) are never parameters: they stay in the environment.

Every change (set, change, reset to the environment's value) is an `info` event in the activity
stream, saying who changed what from which value to which.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from cindy_site.clock import now
from cindy_site.parameters import parameters_install, parameters_installed
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from llm.endpoint_store import endpoints_refresh
from llm.models import SiteParameter
from llm.routing import UnknownModelError, is_default_name, resolve
from llm.selectors import stored_parameters

logger = logging.getLogger(__name__)


class ParameterError(ValueError):
    """A value an operator typed that the parameter does not accept; the message names the fix."""


def _int(minimum: int) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ParameterError(
                f'{name} is "{raw}": it must be a whole number, at least {minimum}'
            ) from None
        if value < minimum:
            raise ParameterError(f"{name} is {value}: it must be at least {minimum}")
        return value

    return parse


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ParameterError(
            f'{name} is "{raw}": it must be a number of seconds, 0 or more (e.g. 3)'
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ParameterError(f"{name} is {raw}: it must be a number of seconds, 0 or more (e.g. 3)")
    return value


def _llm(*, optional: bool, gemini_only: bool = False) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = raw.strip()
        if not value and optional:
            return ""
        if is_default_name(value):
            raise ParameterError(f"{name} is empty: give an LLM name such as gemini, grok or gpt")
        try:
            route = resolve(value)
        except UnknownModelError as exc:
            raise ParameterError(f"{name}: {exc}") from None
        if gemini_only and route.provider != "gemini":
            raise ParameterError(
                f'{name} is "{value}": pictures are made by Gemini image models only; use a name such '
                "as gemini-2.5-flash-image"
            )
        return value

    return parse


@dataclass(frozen=True)
class Parameter:
    name: str
    parse: Callable[[str, str], Any]
    help: str


PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter(
            "DEFAULT_AGENT_LLM",
            _llm(optional=False),
            "The LLM of an agent and conversation that name none (gemini, grok, gpt, an OpenRouter name).",
        ),
        Parameter(
            "MEDIA_MODEL", _llm(optional=False), "The model that describes photos, stickers and videos."
        ),
        Parameter(
            "TRANSLATION_MODEL",
            _llm(optional=True),
            "The model that translates for operators; empty: the conversation's LLM.",
        ),
        Parameter(
            "TRANSCRIPTION_MODEL",
            _llm(optional=True),
            "The model that transcribes voice notes; empty: MEDIA_MODEL for a Gemini agent, else whisper.",
        ),
        Parameter(
            "CINDY_IMAGE_MODEL",
            _llm(optional=False, gemini_only=True),
            "The Gemini image model that makes pictures.",
        ),
        Parameter("CINDY_HISTORY_SIZE", _int(1), "Messages of a conversation a planning turn reads at most."),
        Parameter(
            "CINDY_READ_DELAY_SECONDS", _seconds, "Seconds an agent waits after a message before it replies."
        ),
        Parameter("MEDIA_DESC_BUDGET_PER_TICK", _int(0), "Media descriptions started per gateway pass."),
        Parameter(
            "MEDIA_VIDEO_MAX_DURATION_SECONDS",
            _int(1),
            "Videos, GIFs and animations longer than this (seconds) are never fetched nor described.",
        ),
        Parameter("RETRIEVAL_MAX_ROUNDS", _int(1), "Web retrieval rounds a planning turn may take."),
        Parameter("CINDY_IMAGES_PER_DAY", _int(0), "Pictures an agent may make per day (0: none)."),
        Parameter(
            "CINDY_CONSOLIDATE_QUIET_SECONDS",
            _int(1),
            "Seconds a conversation stays quiet after new messages before a consolidation turn reviews them.",
        ),
        Parameter(
            "CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS",
            _int(1),
            "The same while the agent sleeps per its schedule (when shorter than the above).",
        ),
        Parameter(
            "CINDY_CONSOLIDATE_PER_DAY", _int(0), "Consolidation turns an agent may have per day (0: none)."
        ),
        Parameter(
            "CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR",
            _int(0),
            "Planning turns in the last hour from which a conversation that misses Gemini's implicit "
            "cache gets an explicit cache of its stable prefix (0: never).",
        ),
        Parameter(
            "CINDY_EXPLICIT_CACHE_TTL_SECONDS",
            _int(60),
            "Seconds a Gemini explicit cache is kept after it is made or last extended (storage is billed).",
        ),
    )
}


def _spec(name: str) -> Parameter:
    try:
        return PARAMETERS[name]
    except KeyError:
        raise ParameterError(
            f'"{name}" is not a global parameter: the admin can set {", ".join(PARAMETERS)}'
        ) from None


def parse_value(name: str, raw: str) -> Any:
    """`raw` as the parameter's type, or ParameterError naming the parameter, the value and the fix."""
    return _spec(name).parse(name, raw)


def _load(rows: dict[str, str]) -> None:
    if rows == parameters_installed():
        return
    parsed: dict[str, Any] = {}
    for name, raw in rows.items():
        if name not in PARAMETERS:
            logger.warning("global parameter %s is stored but is no parameter: ignored", name)
            continue
        try:
            parsed[name] = parse_value(name, raw)
        except ParameterError as exc:
            logger.warning("global parameter ignored, the environment's value is used: %s", exc)
    parameters_install(parsed, rows)


def parameters_refresh() -> None:
    """Read the admin's LLM endpoints (llm/endpoint_store.py: first, since a stored LLM name may route
    to one) and the stored overrides again: a query over a dozen rows each, before every task a worker
    runs and at every full gateway pass (plain SQL: `llm.selectors`)."""
    endpoints_refresh()
    _load(stored_parameters())


def refresh_before_task(sender: object = None, **kwargs: Any) -> None:
    """django-q2's `pre_execute` receiver: a task starts with the overrides stored now. A failed read
    keeps the previous copy (the task itself will meet the same database and report it)."""
    try:
        parameters_refresh()
    except Exception as exc:
        logger.warning("could not read the global parameters, keeping the previous ones: %r", exc)


def effective_parameters() -> list[dict[str, Any]]:
    """Each parameter with its effective value and where it comes from, read from the database now."""
    stored = {row.name: row for row in SiteParameter.objects.all()}
    rows = []
    for name, spec in PARAMETERS.items():
        row = stored.get(name)
        error = ""
        if row is not None:
            try:
                value = parse_value(name, row.value)
            except ParameterError as exc:
                error = str(exc)
                value = getattr(settings, name)
        else:
            value = getattr(settings, name)
        rows.append(
            {
                "name": name,
                "help": spec.help,
                "value": value,
                "source": "database" if row is not None and not error else "environment",
                "stored": row,
                "environment": getattr(settings, name),
                "error": error,
            }
        )
    return rows


def _record(name: str, *, old: str, new: str, by: str, summary: str) -> None:
    record_event(
        ActivityEvent.Kind.INFO,
        summary=summary,
        data={"parameter": name, "old": old, "new": new, "by": by},
    )


def _shown(value: Any) -> str:
    return '""' if value == "" else str(value)


def parameter_set(name: str, raw: str, *, by: str) -> Any:
    """Store an override (validated first); returns the parsed value. Audited."""
    value = parse_value(name, raw)
    text = str(raw).strip()
    with transaction.atomic():
        row = SiteParameter.objects.select_for_update().filter(name=name).first()
        old = row.value if row is not None else None
        if row is not None and old == text:
            return value
        SiteParameter.objects.update_or_create(
            name=name, defaults={"value": text, "updated": now(), "updated_by": by}
        )
        before = _shown(old) if old is not None else f"{_shown(getattr(settings, name))} (environment)"
        _record(
            name,
            old=old if old is not None else "",
            new=text,
            by=by,
            summary=f"Global parameter {name} changed from {before} to {_shown(text)} by {by or 'unknown'}",
        )
    parameters_refresh()
    return value


def parameter_reset(name: str, *, by: str) -> bool:
    """Drop the override: the environment's value applies again. Returns whether there was one."""
    _spec(name)
    with transaction.atomic():
        row = SiteParameter.objects.select_for_update().filter(name=name).first()
        if row is None:
            return False
        row.delete()
        env = _shown(getattr(settings, name))
        _record(
            name,
            old=row.value,
            new="",
            by=by,
            summary=f"Global parameter {name} reset from {_shown(row.value)} to the environment's {env} "
            f"by {by or 'unknown'}",
        )
    parameters_refresh()
    return True
