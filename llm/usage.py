"""Usage and cost: every LLM call becomes an `LLMCall` row and an `llm_call` activity event."""

from __future__ import annotations

import datetime as dt
import os
import socket
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

from cindy_site.clock import now
from cindy_site.rows import insert as insert_row
from conversations.models import ActivityEvent, NodeStatus, TaskNode
from conversations.models.graph import BRAIN_KINDS
from conversations.services.activity import record_event
from conversations.services.nodes import node_release
from llm.models import LLMCall, ModelPrice
from llm.request import LLMRequest, Usage
from llm.selectors import prices_matching

_MILLION = Decimal(1_000_000)
_MINUTE = Decimal(60)


def price_for(provider: str, model: str) -> ModelPrice | None:
    """The price row whose model_prefix is the longest prefix of `model` for this provider."""
    found = prices_matching(provider=str(provider), model=model)  # plain SQL: llm/selectors.py
    return next((price for price in found if model.startswith(price.model_prefix)), None)


def estimate_cost(
    provider: str, model: str, usage: Usage, *, price: ModelPrice | None | object = ...
) -> Decimal:
    """USD for one call. Cached input tokens are part of input tokens and billed at the cached rate;
    tokens written to a prompt cache are part of input tokens and billed at the cache write rate where
    the price row has one;
    audio tokens are part of input tokens and billed at the audio rate where the price row has one;
    thinking tokens are billed as output; image output tokens are part of output tokens and billed at
    the image output rate when the price has one; audio billed by duration costs its minutes at the
    per-minute rate. Unknown models cost 0 (add a price in the admin). `price`: the row `price_for`
    found already (None: no price), so it is not looked up again."""
    if price is ...:
        price = price_for(provider, model)
    if price is None:
        return Decimal("0")
    cached = min(usage.cached_tokens, usage.input_tokens)
    written = min(usage.cache_write_tokens, usage.input_tokens - cached)
    audio = min(usage.audio_tokens, usage.input_tokens - cached - written)
    audio_rate = price.audio_input_per_million
    write_rate = price.cache_write_per_million
    # Image output (a picture the model made) has its own rate where the price table gives one.
    images = min(usage.image_output_tokens, usage.output_tokens) if price.image_output_per_million else 0
    total = (
        Decimal(usage.input_tokens - cached - written - audio) * price.input_per_million
        + Decimal(audio) * (price.input_per_million if audio_rate is None else audio_rate)
        + Decimal(cached) * price.cached_input_per_million
        + Decimal(written) * (price.input_per_million if write_rate is None else write_rate)
        + Decimal(usage.output_tokens - images + usage.thinking_tokens) * price.output_per_million
        + Decimal(images) * price.image_output_per_million
    ) / _MILLION
    if usage.audio_seconds and price.audio_per_minute:
        total += Decimal(str(usage.audio_seconds)) / _MINUTE * price.audio_per_minute
    return total.quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP)


def estimate_input_tokens(request: LLMRequest) -> int:
    """A rough input size for a call whose usage never came back: 4 characters a token, 258 a media part
    (a provider's flat rate for an image)."""
    chars, media = len(request.system), 0
    for turn in request.turns:
        for part in turn.parts:
            chars += len(part.text)
            media += part.is_media
    return chars // 4 + 258 * media


def llm_call_start(
    *,
    provider: str,
    model: str,
    purpose: str,
    agent_id: int | None,
    conversation_id: int | None,
    node_id: int | None,
    estimated_input_tokens: int = 0,
    fingerprint: str = "",
) -> LLMCall:
    """Write the call's row before its request is sent: pending, costed at its estimated input.

    A worker killed during the request leaves this row behind, so the call still counts in the usage
    and cost figures; `llm_calls_mark_interrupted` later closes it.
    """
    usage = Usage(input_tokens=estimated_input_tokens)
    price = price_for(provider, model)
    call = insert_row(  # one plain INSERT, as record_event writes its events
        LLMCall(
            created=now(),
            agent_id=agent_id,
            conversation_id=conversation_id,
            node_id=node_id,
            purpose=purpose,
            provider=provider,
            model=model,
            input_tokens=usage.input_tokens,
            cost=estimate_cost(provider, model, usage, price=price),
            status=LLMCall.Status.PENDING,
            fingerprint=fingerprint,
            worker=worker_name(),
        )
    )
    call.price_row = price  # `llm_call_finish` costs the outcome at the same price, without a query
    return call


def _this_host() -> str:
    """The "<host>:" every LLMCall.worker of this host starts with."""
    return f"{socket.gethostname()[:100]}:"


def worker_name(pid: int | None = None) -> str:
    """This process (or `pid` on this host) as LLMCall.worker names it: "<host>:<pid>"."""
    return f"{_this_host()}{pid or os.getpid()}"


def worker_pid_on_this_host(worker: str) -> int | None:
    """The pid a worker name ("<host>:<pid>", `worker_name`) gives, if the worker is of this host."""
    host = _this_host()
    pid = worker[len(host) :] if worker.startswith(host) else ""
    return int(pid) if pid.isdigit() else None


def llm_calls_interrupt(*, pids: list[int]) -> int:
    """Close the pending calls of these processes of this host, which were killed: their planning
    nodes are then re-run at once (engine.watchdog), not after CINDY_Q_TIMEOUT."""
    if not pids:
        return 0
    return _interrupt(
        LLMCall.objects.filter(status=LLMCall.Status.PENDING, worker__in=[worker_name(p) for p in pids])
    )


def llm_calls_interrupt_gone(*, alive: Callable[[int], bool]) -> int:
    """Close the pending calls of processes of this host that no longer exist (`alive(pid)` says
    which do). `runworkers` closes the calls of a pool it replaces itself; this catches the ones it
    could not: the database refused that write, or `runworkers` itself was killed and its successor
    never knew the dead pool's pids. Left pending, such a call made the planning watchdog take the
    pool for busy until CINDY_Q_TIMEOUT (engine/watchdog.py)."""
    pending = LLMCall.objects.filter(status=LLMCall.Status.PENDING, worker__startswith=_this_host())
    gone = []
    for pk, worker in pending.values_list("pk", "worker")[:500]:
        pid = worker_pid_on_this_host(worker)
        if pid is not None and pid != os.getpid() and not alive(pid):
            gone.append(pk)
    return _interrupt(LLMCall.objects.filter(pk__in=gone, status=LLMCall.Status.PENDING)) if gone else 0


def llm_call_finish(
    call: LLMCall,
    *,
    usage: Usage,
    status: str,
    latency_ms: int,
    error: str = "",
    reply: str = "",
    explicit_cache: bool = False,
    note: str = "",
) -> LLMCall:
    """Record the outcome of a started call (its real usage and cost) and its activity event.
    `explicit_cache`: the request named a Gemini explicit cache (llm/explicit_cache.py). `note`: what
    the provider worked around on the way (an endpoint that refused structured output), kept in the
    row's `error` of a call that did not fail and added to its activity event."""
    call.input_tokens = usage.input_tokens
    call.output_tokens = usage.output_tokens
    call.cached_tokens = usage.cached_tokens
    call.cache_write_tokens = usage.cache_write_tokens
    call.thinking_tokens = usage.thinking_tokens
    call.audio_tokens = usage.audio_tokens
    call.audio_seconds = usage.audio_seconds
    call.image_output_tokens = usage.image_output_tokens
    call.cost = estimate_cost(call.provider, call.model, usage, price=getattr(call, "price_row", ...))
    call.latency_ms = latency_ms
    call.status = status
    call.error = (error or note)[:4000]
    call.reply = reply if call.fingerprint and status == LLMCall.Status.OK else ""
    call.explicit_cache = explicit_cache
    call.save(
        update_fields=[
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "cache_write_tokens",
            "thinking_tokens",
            "audio_tokens",
            "audio_seconds",
            "image_output_tokens",
            "cost",
            "latency_ms",
            "status",
            "error",
            "reply",
            "explicit_cache",
        ]
    )
    _record_call_event(call, note=note)
    return call


def llm_cache_cost_record(
    *,
    provider: str,
    model: str,
    agent_id: int | None,
    conversation_id: int | None,
    cost: Decimal,
    summary: str,
) -> LLMCall:
    """Record what making or keeping an explicit cache cost: an `LLMCall` of purpose `cache` without
    tokens of its own (so the usage figures count each token once), and its activity event."""
    call = LLMCall.objects.create(
        created=now(),
        agent_id=agent_id,
        conversation_id=conversation_id,
        purpose=LLMCall.Purpose.CACHE,
        provider=provider,
        model=model,
        cost=cost,
        status=LLMCall.Status.OK,
        explicit_cache=True,
        worker=worker_name(),
    )
    _record_call_event(call, detail=summary)
    return call


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
    """Write a finished call's row and its activity event at once."""
    call = llm_call_start(
        provider=provider,
        model=model,
        purpose=purpose,
        agent_id=agent_id,
        conversation_id=conversation_id,
        node_id=node_id,
    )
    return llm_call_finish(call, usage=usage, status=status, latency_ms=latency_ms, error=error)


def llm_calls_mark_interrupted(*, started_before: dt.datetime) -> int:
    """Close the calls still pending that started before `started_before`: their worker was killed
    (a live worker is stopped at CINDY_Q_TIMEOUT). They keep their estimated cost."""
    return _interrupt(LLMCall.objects.filter(status=LLMCall.Status.PENDING, created__lt=started_before))


def _interrupt(stale) -> int:
    closed = 0
    for call in stale.order_by("pk")[:500]:
        updated = LLMCall.objects.filter(pk=call.pk, status=LLMCall.Status.PENDING).update(
            status=LLMCall.Status.INTERRUPTED,
            error="the task worker was killed during the call; cost estimated from the request size",
        )
        if updated:
            call.refresh_from_db()
            _record_call_event(call)
            closed += 1
    return closed


def _record_call_event(call: LLMCall, *, detail: str = "", note: str = "") -> None:
    explicit = " explicit cache" if call.explicit_cache and call.purpose != LLMCall.Purpose.CACHE else ""
    noted = f" ({note})" if note else ""
    record_event(
        ActivityEvent.Kind.LLM_CALL,
        agent_id=call.agent_id,
        conversation_id=call.conversation_id,
        node_id=call.node_id,
        summary=(
            f"{call.purpose} {call.provider}/{call.model}: {detail}, ${call.cost}"
            if detail
            else f"{call.purpose} {call.provider}/{call.model} {call.status}: {call.input_tokens} in "
            f"({call.cached_tokens} cached{explicit}{_written(call)}), {call.output_tokens} out, ${call.cost}"
            f"{noted}"
        ),
        data={
            "llm_call_id": call.pk,
            "purpose": call.purpose,
            "provider": call.provider,
            "model": call.model,
            "status": call.status,
            "input_tokens": call.input_tokens,
            "output_tokens": call.output_tokens,
            "cached_tokens": call.cached_tokens,
            **({"cache_write_tokens": call.cache_write_tokens} if call.cache_write_tokens else {}),
            "thinking_tokens": call.thinking_tokens,
            **({"audio_tokens": call.audio_tokens} if call.audio_tokens else {}),
            **({"audio_seconds": call.audio_seconds} if call.audio_seconds else {}),
            "image_output_tokens": call.image_output_tokens,
            **({"explicit_cache": True} if call.explicit_cache else {}),
            "cost": str(call.cost),
            "latency_ms": call.latency_ms,
            **({"note": note} if note else {}),
        },
    )


def _written(call: LLMCall) -> str:
    return f", {call.cache_write_tokens} written to the cache" if call.cache_write_tokens else ""


def brain_nodes_release_unstarted(*, reason: str) -> int:
    """Return running planning nodes that have no LLM call in flight to pending (a shared pool run
    apart from the gateways, `runworkers` without a gateway, was replaced: the tasks in its queue are
    lost with it, and its calls in flight were closed as interrupted).

    A node whose call finished but whose plan was not stored yet (its worker died with the pool) is
    planned again and reuses that reply (`llm.calls.finished_reply`): no second paid call. A node
    another pool is planning right now, before its call started or after it finished, is planned
    again under a new claim; the first task's result is then dropped (the claim changed), so nothing
    acts twice.
    """
    running = TaskNode.objects.filter(status=NodeStatus.RUNNING, kind__in=BRAIN_KINDS).values_list(
        "pk", "lease_owner", "started"
    )
    released = 0
    for pk, owner, started in list(running):
        calls = (
            LLMCall.objects.filter(node_id=pk, created__gte=started) if started else LLMCall.objects.none()
        )
        if calls.filter(status=LLMCall.Status.PENDING).exists():
            continue
        released += node_release(node_id=pk, owner=owner, reason=reason)
    return released
