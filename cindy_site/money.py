"""Amounts of US dollars as people read them: cents at least, and every further decimal that is there.

LLM costs and spend caps are stored with 6 decimals (`decimal_places=6`), so a cap of $0.0042 is
shown as "0.0042", not rounded to "0.00", and $2.5 as "2.50".
"""

from __future__ import annotations

from decimal import Decimal

#: The finest amount stored (LLMCall.cost and Agent.daily_spend_cap have 6 decimals).
USD_PLACES = 6
CENT = Decimal("0.01")


def usd(amount: Decimal) -> str:
    """`amount` with at least two decimals and no trailing zeros past them (at most 6 decimals)."""
    amount = amount.quantize(Decimal(1).scaleb(-USD_PLACES)).normalize()
    if amount.as_tuple().exponent > -2:  # type: ignore[operator]
        amount = amount.quantize(CENT)
    return f"{amount:f}"


def usd_places(amount: Decimal) -> int:
    """How many decimals `amount` is written with (0 for whole amounts)."""
    exponent = amount.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0
