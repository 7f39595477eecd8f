"""The reader of the global parameters an operator tunes at run time (the rest, with the list of them,
their validation, the reload and the audited changes, is `llm/parameter_store.py`).

`parameter("CINDY_HISTORY_SIZE")` is the value in effect: this process's copy of the override stored in
the admin, else the setting from the environment. It costs no query; the copy is reloaded where a unit
of work starts (see llm/parameter_store.py). The reader needs no model, so it sits in the core where
every app may read it (`cindy_site/llm_names.py` reads DEFAULT_AGENT_LLM); the stored overrides, their
validation and their admin page are the llm app's.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

#: The settings an operator may override in the admin. Secrets (API keys, tokens, DATABASE_URL) never are.
NAMES = (
    "DEFAULT_AGENT_LLM",
    "MEDIA_MODEL",
    "TRANSLATION_MODEL",
    "TRANSCRIPTION_MODEL",
    "CINDY_IMAGE_MODEL",
    "CINDY_HISTORY_SIZE",
    "CINDY_READ_DELAY_SECONDS",
    "MEDIA_DESC_BUDGET_PER_TICK",
    "MEDIA_VIDEO_MAX_DURATION_SECONDS",
    "RETRIEVAL_MAX_ROUNDS",
    "CINDY_IMAGES_PER_DAY",
    "CINDY_CONSOLIDATE_QUIET_SECONDS",
    "CINDY_CONSOLIDATE_ASLEEP_QUIET_SECONDS",
    "CINDY_CONSOLIDATE_PER_DAY",
    "CINDY_EXPLICIT_CACHE_TURNS_PER_HOUR",
    "CINDY_EXPLICIT_CACHE_TTL_SECONDS",
)

#: The overrides this process read last: name -> parsed value, and the stored texts they came from.
#: Replaced whole, never mutated, so a reader on another thread sees one set or the other.
_overrides: dict[str, Any] = {}
_raw: dict[str, str] = {}


def parameter(name: str) -> Any:
    """The value in effect: this process's copy of the stored override, else the setting."""
    if name in _overrides:
        return _overrides[name]
    if name not in NAMES:
        raise KeyError(f'"{name}" is not a global parameter: the admin can set {", ".join(NAMES)}')
    return getattr(settings, name)


def parameters_installed() -> dict[str, str]:
    """The stored texts this process's copy was parsed from."""
    return _raw


def parameters_install(values: dict[str, Any], raw: dict[str, str]) -> None:
    global _overrides, _raw
    _overrides, _raw = dict(values), dict(raw)


def parameters_forget() -> None:
    """Drop this process's copy (tests: each starts with the environment's values)."""
    parameters_install({}, {})
