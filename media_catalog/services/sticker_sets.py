"""Which sticker sets an agent uses, and asking a gateway to fetch one again.

The import itself runs in the gateway (`engine/stickers.py`), which holds the Telegram connection;
the admin only writes the request row that the gateway executes.
"""

from __future__ import annotations

from typing import Any

from agents.models import Agent, GatewayRequest, Transport
from cindy_site.clock import now


def wanted_sticker_sets(agent: Agent, *, saved: list[dict[str, Any]] | None = None) -> list[str]:
    """Short names of the sets an agent uses: its sets, the sets of its explicit stickers and (given
    `saved`, the account's `StickerAccess.saved_stickers`) the sets of its Saved Messages stickers."""
    names = [s.strip() for s in agent.sticker_set_names or [] if isinstance(s, str) and s.strip()]
    for item in agent.explicit_stickers or []:
        if isinstance(item, str) and "::" in item:
            names.append(item.split("::", 1)[0].strip())
    names += [str(entry.get("set") or "").strip() for entry in saved or []]
    return list(dict.fromkeys(n for n in names if n))


def sticker_set_request_refresh(*, short_name: str) -> GatewayRequest | None:
    """Ask a gateway to fetch a set again (the admin's "Refresh from Telegram").

    The request goes to an enabled, running Telegram agent, preferably one that uses the set; None
    when there is no such agent (the set cannot be fetched from anywhere).
    """
    agents = Agent.objects.filter(disabled=False, stopped=False, transport=Transport.TELEGRAM).order_by("pk")
    chosen = next((a for a in agents if short_name in wanted_sticker_sets(a)), None) or agents.first()
    if chosen is None:
        return None
    return GatewayRequest.objects.create(
        agent=chosen,
        kind=GatewayRequest.Kind.IMPORT_STICKER_SET,
        params={"short_name": short_name},
        created=now(),
    )
