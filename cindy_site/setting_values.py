"""Reading Cindy's settings from the environment: the `.env` file (or `CINDY_ENV_FILE`), and the readers
`cindy_site/settings.py` uses, each of which refuses a bad value with an error naming the variable and
the fix."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
_env_file_setting = env.str("CINDY_ENV_FILE", default="")
_env_file = Path(_env_file_setting) if _env_file_setting else BASE_DIR / ".env"
if _env_file_setting and not _env_file.exists():
    # The default .env may be absent; a file someone named must be there, or their settings are lost.
    raise ImproperlyConfigured(
        f"CINDY_ENV_FILE is {_env_file_setting!r}, but there is no such file "
        f"(looked at {_env_file.resolve()}): fix the path, or unset CINDY_ENV_FILE to read .env"
    )
if _env_file.exists() and not _env_file.is_dir():
    env.read_env(str(_env_file), overwrite=False)


def _number(name: str, default: float, kind: type[int] | type[float]) -> float:
    """The variable as a number, or the default when unset; a value that is not one is refused."""
    try:
        return env.int(name, default=default) if kind is int else env.float(name, default=default)
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} is {env.str(name)!r}: it must be a {'whole ' if kind is int else ''}number, "
            f"e.g. {default}"
        ) from None


def positive_int(name: str, default: int, *, minimum: int = 1) -> int:
    value = int(_number(name, default, int))
    if value < minimum:
        raise ImproperlyConfigured(f"{name} is {value}: it must be at least {minimum}")
    return value


def positive_float(name: str, default: float) -> float:
    value = _number(name, default, float)
    if value <= 0:
        raise ImproperlyConfigured(
            f"{name} is {value}: it must be a positive number of seconds, e.g. {default}"
        )
    return value


def non_negative_float(name: str, default: float, *, zero: str) -> float:
    """A number of 0 or more; `zero` says what 0 means, for the error."""
    value = _number(name, default, float)
    if value < 0:
        raise ImproperlyConfigured(
            f"{name} is {value}: it must be {default} or another number of 0 or more (0: {zero})"
        )
    return value


def optional_usd(name: str) -> Decimal | None:
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value < 0:
        raise ImproperlyConfigured(
            f"{name} is {raw!r}: write an amount of US dollars, e.g. 20 or 7.50 (empty: no cap)"
        )
    return value


def int_list(name: str) -> list[int]:
    values = env.list(name, default=[])
    try:
        return [int(v) for v in values if v.strip()]
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} is {','.join(values)!r}: use comma-separated Telegram user ids, e.g. 12345,67890"
        ) from None
