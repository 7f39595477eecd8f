"""Which Telegram server Telethon connects to: Telegram itself, or a stand-in named by the settings.

`CINDY_TELEGRAM_SERVER=host:port` points the gateway's and `telegram_login`'s clients at another
MTProto server (the loopback stand-in, `manage.py telegram_standin`), with
`CINDY_TELEGRAM_SERVER_KEY` the path of that server's RSA public key (PEM, PKCS#1), which the client
must know to make an auth key. Unset, Telethon talks to Telegram's own data centres.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# The data centre the stand-in says it is; Telethon's own default, so stored sessions agree.
STANDIN_DC_ID = 2


def configured_server() -> tuple[str, int] | None:
    """(host, port) from CINDY_TELEGRAM_SERVER, or None when Telegram itself is used."""
    value = (getattr(settings, "CINDY_TELEGRAM_SERVER", "") or "").strip()
    if not value:
        return None
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise ImproperlyConfigured(
            f"CINDY_TELEGRAM_SERVER is {value!r}: write it as host:port, e.g. 127.0.0.1:8443 "
            f"(or leave it empty to use Telegram)"
        )
    return host, int(port)


def server_public_key() -> str:
    path = (getattr(settings, "CINDY_TELEGRAM_SERVER_KEY", "") or "").strip()
    if not path:
        raise ImproperlyConfigured(
            "CINDY_TELEGRAM_SERVER is set but CINDY_TELEGRAM_SERVER_KEY is empty: set it to the path of "
            "the server's RSA public key (telegram_standin prints it)"
        )
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ImproperlyConfigured(
            f"CINDY_TELEGRAM_SERVER_KEY={path}: cannot read the server's public key ({exc.strerror}); "
            f"start telegram_standin first, or fix the path"
        ) from None


def point_at_configured_server(session) -> None:
    """Make a client on `session` use the configured server, if any (before `connect()`)."""
    server = configured_server()
    if server is None:
        return
    from telethon.crypto import rsa

    rsa.add_key(server_public_key(), old=False)
    session.set_dc(STANDIN_DC_ID, *server)
