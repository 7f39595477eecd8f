"""Usage and cost: every LLM call becomes an `LLMCall` row and an `llm_call` activity event."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from cindy_site.clock import now
from conversations.models import ActivityEvent, LLMCall, ModelPrice
from conversations.services.activity import record_event
from llm.request import Usage

_MILLION = Decimal(1_000_000)


def price_for(provider: str, model: str) -> ModelPrice | None:
    """The price row whose model_prefix is the longest prefix of `model` for this provider."""
    best: ModelPrice | None = None
    for price in ModelPrice.objects.filter(provider=provider):
        if model.startswith(price.model_prefix) and (
            best is None or len(price.model_prefix) > len(best.model_prefix)
        ):
            best = price
    return best


def estimate_cost(provider: str, model: str, usage: Usage) -> Decimal:
    """USD for one call. Cached input tokens are part of input tokens and billed at the cached rate;
    thinking tokens are billed as output. Unknown models cost 0 (add a price in the admin)."""
    price = price_for(provider, model)
    if price is None:
        return Decimal("0")
    cached = min(usage.cached_tokens, usage.input_tokens)
    total = (
        Decimal(usage.input_tokens - cached) * price.input_per_million
        + Decimal(cached) * price.cached_input_per_million
        + Decimal(usage.output_tokens + usage.thinking_tokens) * price.output_per_million
    ) / _MILLION
    return total.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def llm_call_record(
    *,
    provider: str,
    model: str,
    usage: Usage,
    status: str,
    latency_ms: int,
    purpose: str,
    agent_id: int | None,
    conversation_id: int | None,
    node_id: int | None,
    error: str = "",
) -> LLMCall:
    """Write the LLMCall row and its activity event."""
    cost = estimate_cost(provider, model, usage)
    call = LLMCall.objects.create(
        created=now(),
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        purpose=purpose,
        provider=provider,
        model=model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_tokens,
        thinking_tokens=usage.thinking_tokens,
        cost=cost,
        latency_ms=latency_ms,
        status=status,
        error=error[:4000],
    )
    record_event(
        ActivityEvent.Kind.LLM_CALL,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
        summary=(
            f"{purpose} {provider}/{model} {status}: {usage.input_tokens} in "
            f"({usage.cached_tokens} cached), {usage.output_tokens} out, ${cost}"
        ),
        data={
            "llm_call_id": call.pk,
            "purpose": purpose,
            "provider": provider,
            "model": model,
            "status": status,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cached_tokens": usage.cached_tokens,
            "thinking_tokens": usage.thinking_tokens,
            "cost": str(cost),
            "latency_ms": latency_ms,
        },
    )
    return call
