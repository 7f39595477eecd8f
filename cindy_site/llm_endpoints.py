"""The OpenAI-compatible endpoints an LLM name can address as `NAME:MODEL`, wherever they are set.

Two sources: the environment (`CINDY_LLM_ENDPOINTS`, keys in `CINDY_LLM_ENDPOINT_<NAME>_KEY`) and the
admin's table (`llm.models.LLMEndpoint`). The setting wins on a name clash. The reader needs no model,
so it sits in the core, where `cindy_site/llm_names.py` routes names; the llm app installs this
process's copy of the stored rows (`llm/endpoint_store.py`) where a unit of work starts, the same
places the global parameters are reloaded (`cindy_site/parameters.py`). Reading costs no query.

A process that has not reloaded yet (a management command such as `importagents`, a web process that
did not save the table) would not know a stored name: `endpoint_lookup` asks the llm app's loader
(registered with `stored_endpoints_loader`) when a name that could be an endpoint is not in the copy,
at most once per LOOKUP_SECONDS, so a name that is no endpoint costs no query per turn.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings

logger = logging.getLogger(__name__)

#: An endpoint's name: lowercase letters, digits, - or _, starting with a letter (as in the setting).
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,31}")
#: Names the built-in providers own: an endpoint cannot take them.
RESERVED_NAMES = ("gemini", "grok", "openai", "openrouter", "anthropic")
#: Whether an endpoint is sent the reply schema as `response_format` (llm/providers/openai_compat.py):
#: "auto" until it refuses or ignores it, "on" always, "off" never (the prompt alone, as before).
STRUCTURED_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class Endpoint:
    name: str
    base_url: str
    api_key: str = field(default="", repr=False)  # never in a repr, a log line or an error
    source: str = "setting"  # "setting" (CINDY_LLM_ENDPOINTS) or "admin" (an LLMEndpoint row)
    structured: str = "auto"  # one of STRUCTURED_MODES


#: How often a miss may read the table again (seconds, per process).
LOOKUP_SECONDS = 10.0

#: The enabled rows this process read last, by name. Replaced whole, never mutated.
_stored: dict[str, Endpoint] = {}
_loader: Callable[[], None] | None = None
_last_lookup: float | None = None


def endpoint_name_problem(name: str) -> str | None:
    """Why `name` cannot name an endpoint, with the fix; None when it can."""
    if not NAME_PATTERN.fullmatch(name):
        return (
            f'"{name}" is not an endpoint name: use lowercase letters, digits, - or _, starting with a '
            "letter, at most 32 characters (e.g. ollama, vllm-gpu)"
        )
    if name in RESERVED_NAMES:
        return f'"{name}" is a built-in provider: give the endpoint another name (e.g. {name}-local)'
    return None


def endpoints_setting(setting: str, pairs: list[str]) -> dict[str, str]:
    """The endpoints of a `name=url` list setting (CINDY_LLM_ENDPOINTS), read while settings load: a
    pair that is not `name=url`, or whose name `endpoint_name_problem` refuses, stops the start with
    the pair and the fix."""
    from django.core.exceptions import ImproperlyConfigured

    endpoints: dict[str, str] = {}
    for pair in pairs:
        name, sep, url = (part.strip() for part in pair.partition("="))
        name = name.lower()
        if not sep or not url.startswith(("http://", "https://")):
            raise ImproperlyConfigured(
                f'{setting}: "{pair}" is not name=url: write e.g. {setting}=ollama=http://localhost:11434/v1 '
                "(a name of letters, digits, - or _, starting with a letter; an http or https URL)"
            )
        problem = endpoint_name_problem(name)
        if problem:
            raise ImproperlyConfigured(f"{setting}: {problem}")
        endpoints[name] = url
    return endpoints


def endpoint_variable(name: str, suffix: str) -> str:
    """The environment variable of one endpoint's option: CINDY_LLM_ENDPOINT_<NAME>_<SUFFIX>."""
    return f"CINDY_LLM_ENDPOINT_{name.upper().replace('-', '_')}_{suffix}"


def endpoints_structured_setting(values: dict[str, str]) -> dict[str, str]:
    """Each endpoint's CINDY_LLM_ENDPOINT_<NAME>_STRUCTURED (`values`: name -> the raw value, empty
    for auto), checked while settings load: a value not in STRUCTURED_MODES stops the start."""
    from django.core.exceptions import ImproperlyConfigured

    modes: dict[str, str] = {}
    for name, value in values.items():
        mode = (value or "auto").strip().lower()
        if mode not in STRUCTURED_MODES:
            raise ImproperlyConfigured(
                f'{endpoint_variable(name, "STRUCTURED")}: "{value}" is not auto, on or off: auto sends '
                "the reply schema as response_format until the server refuses it, on always, off never"
            )
        modes[name] = mode
    return modes


def configured_endpoints() -> dict[str, Endpoint]:
    """The endpoints of CINDY_LLM_ENDPOINTS, by name."""
    urls = getattr(settings, "CINDY_LLM_ENDPOINTS", {}) or {}
    keys = getattr(settings, "CINDY_LLM_ENDPOINT_KEYS", {}) or {}
    modes = getattr(settings, "CINDY_LLM_ENDPOINT_STRUCTURED", {}) or {}
    return {
        name: Endpoint(name, url, keys.get(name, "") or "", "setting", modes.get(name, "auto"))
        for name, url in urls.items()
    }


def endpoints() -> dict[str, Endpoint]:
    """Every endpoint in effect, by name: the setting's, then the admin's whose name the setting does
    not use."""
    merged = configured_endpoints()
    for name, endpoint in _stored.items():
        merged.setdefault(name, endpoint)
    return merged


def endpoint_lookup(name: str) -> Endpoint | None:
    """The endpoint `name` in effect; a name this process's copy lacks is looked up in the table
    (at most once per LOOKUP_SECONDS; a failed read keeps the copy)."""
    found = endpoints().get(name)
    if found is not None or _loader is None or endpoint_name_problem(name):
        return found
    global _last_lookup
    moment = time.monotonic()
    if _last_lookup is not None and moment - _last_lookup < LOOKUP_SECONDS:
        return None
    _last_lookup = moment
    try:
        _loader()
    except Exception as exc:  # no table yet (before migrate), an async caller, a lost connection
        logger.warning("could not read the LLM endpoints stored in the admin: %r", exc)
        return None
    return endpoints().get(name)


def stored_endpoints_loader(loader: Callable[[], None]) -> None:
    """Register the function that reads the table and installs it (llm/apps.py)."""
    global _loader
    _loader = loader


def stored_endpoints_install(rows: list[Endpoint]) -> None:
    global _stored
    _stored = {row.name: row for row in rows}


def stored_endpoints_installed() -> dict[str, Endpoint]:
    return _stored


def stored_endpoints_forget() -> None:
    """Drop this process's copy (tests: each starts with the environment's endpoints only)."""
    global _last_lookup
    _last_lookup = None
    stored_endpoints_install([])
