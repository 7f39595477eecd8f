"""System checks for the Telegram settings agents' accounts run with (registered by `AgentsConfig.ready()`)."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, Warning, register

from cindy_site.checks import CINDY


@register(CINDY)
def check_telegram_settings(app_configs, **kwargs):
    messages = []
    api_id, api_hash = settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH
    if bool(api_id) != bool(api_hash):
        missing = "TELEGRAM_API_HASH" if api_id else "TELEGRAM_API_ID"
        messages.append(
            Error(
                f"{missing} is empty while its partner is set: Telegram needs both",
                hint="Copy both values from https://my.telegram.org (API development tools), or clear both "
                "to run agents in the sandbox only.",
                id="cindy.E004",
            )
        )
    if api_id and not str(api_id).strip().isdigit():
        messages.append(
            Error(
                f'TELEGRAM_API_ID is "{api_id}": it must be a number',
                hint="Use the numeric api_id from https://my.telegram.org.",
                id="cindy.E005",
            )
        )
    if api_id and api_hash and not settings.CINDY_SESSION_KEY:
        messages.append(
            Warning(
                "TELEGRAM_API_ID/HASH are set but CINDY_SESSION_KEY is empty: Telegram sessions cannot be "
                "stored, so telegram_login and runagents will refuse Telegram agents",
                hint='Set CINDY_SESSION_KEY (python -c "import secrets; print(secrets.token_urlsafe(32))") '
                "and keep it.",
                id="cindy.W003",
            )
        )
    messages += _telegram_server_problems()
    return messages


def _telegram_server_problems() -> list[Error]:
    """CINDY_TELEGRAM_SERVER (another MTProto server, such as the stand-in) must be usable."""
    from django.core.exceptions import ImproperlyConfigured

    from agents.telegram_server import configured_server, server_public_key

    try:
        if configured_server() is not None:
            server_public_key()
    except ImproperlyConfigured as exc:
        return [
            Error(
                str(exc),
                hint="python manage.py telegram_standin prints both settings; clear both to use Telegram.",
                id="cindy.E010",
            )
        ]
    return []
