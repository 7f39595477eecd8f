"""Gateway requests: Telegram work that web or worker code asked for, run by the agent's gateway.

A claim is a lease (`claim_expires`): a request left `running` by a gateway that died goes back to
pending once the lease expires, or fails after `MAX_REQUEST_ATTEMPTS` claims with the reason.
Sign-in requests are the exception: their agent is held by nobody, so any gateway fails an expired
one (`signin_requests_reap_expired`), and its code or password is blanked in the same update. A
request's secrets never outlive it: every way it ends (done, failed, replaced, reaped) blanks them.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import F, Q

from agents.models import Agent, GatewayRequest
from cindy_site.clock import now
from cindy_site.lookups import Ids
from conversations.models import Conversation
from conversations.services.ingest import (
    OTP_RANDOM_ID_BASE,
    conversation_apply_details,
    conversation_upsert,
    message_record_sent,
)
from conversations.transport.base import SentMessage, Transport
from engine.account_requests import HANDLERS as ACCOUNT_HANDLERS
from engine.account_requests import account_request_run
from engine.backfill_requests import backfill_page
from engine.request_errors import request_error
from engine.stickers import sticker_set_import

logger = logging.getLogger(__name__)
Status = GatewayRequest.Status

SIGN_IN_KINDS = frozenset(
    {
        GatewayRequest.Kind.SIGN_IN_START,
        GatewayRequest.Kind.SIGN_IN_CODE,
        GatewayRequest.Kind.SIGN_IN_PASSWORD,
    }
)
#: Sign-in params that are secrets: kept only until the request ran.
SECRET_PARAMS = ("code", "password")
#: Requests taken per agent per step.
BATCH = 10
#: A request claimed this many times without finishing fails instead of going back to pending.
MAX_REQUEST_ATTEMPTS = 3


def claim_seconds() -> int:
    # Longer than a lease: a request runs inside one gateway pass, which heartbeats at lease / 3.
    return max(settings.CINDY_LEASE_SECONDS * 2, 60)


def requests_pending_agents(*, agent_ids: list[int]) -> set[int]:
    """Which of these agents have pending requests: one query, so an idle pass claims for nobody."""
    if not agent_ids:
        return set()
    return set(
        GatewayRequest.objects.filter(agent_id__in_ids=Ids(agent_ids), status=Status.PENDING)
        .values_list("agent_id", flat=True)
        .distinct()
    )


def requests_claim(*, agent_id: int, holder: str) -> list[GatewayRequest]:
    """Claim the agent's pending requests, oldest first (compare-and-set on status), with a lease."""
    claimed = []
    pending = GatewayRequest.objects.filter(agent_id=agent_id, status=Status.PENDING).order_by(
        "created", "id"
    )[:BATCH]
    expires = now() + dt.timedelta(seconds=claim_seconds())
    for request in pending:
        changed = GatewayRequest.objects.filter(pk=request.pk, status=Status.PENDING).update(
            status=Status.RUNNING, claimed_by=holder, claim_expires=expires, attempts=F("attempts") + 1
        )
        if changed == 1:
            request.status, request.claimed_by, request.claim_expires = Status.RUNNING, holder, expires
            request.attempts += 1
            claimed.append(request)
    return claimed


def requests_reap_expired(*, agent_ids: list[int]) -> int:
    """Return requests whose claim expired (their gateway died mid-request) to pending; a request
    claimed `MAX_REQUEST_ATTEMPTS` times fails with the reason instead. Returns rows changed.
    Sign-in requests are left to `signin_requests_reap_expired`."""
    when = now()
    stale = Q(claim_expires__lt=when) | Q(claim_expires__isnull=True)
    expired = GatewayRequest.objects.filter(
        stale, agent_id__in_ids=Ids(agent_ids), status=Status.RUNNING
    ).exclude(kind__in=SIGN_IN_KINDS)
    changed = 0
    for request in expired:
        base = GatewayRequest.objects.filter(
            pk=request.pk, status=Status.RUNNING, claimed_by=request.claimed_by
        )
        base = base.filter(stale)
        if request.attempts >= MAX_REQUEST_ATTEMPTS:
            changed += base.update(
                status=Status.FAILED,
                finished=when,
                claim_expires=None,
                error=(
                    f"gave up after {request.attempts} attempts: the gateway running it "
                    f"({request.claimed_by or 'unknown'}) stopped before it finished each time; "
                    "check the runagents log, then create the request again"
                ),
            )
        else:
            changed += base.update(status=Status.PENDING, claimed_by="", claim_expires=None)
    if changed:
        logger.warning("returned %s gateway request(s) left running by a stopped gateway", changed)
    return changed


def signin_requests_reap_expired() -> int:
    """Fail every sign-in request whose claim expired, whichever agent it is for, and blank its code
    or password in the same update. Any gateway runs this: the agent of a sign-in is held by nobody,
    so no gateway would otherwise look at it. Returns rows changed."""
    when = now()
    stale = Q(claim_expires__lt=when) | Q(claim_expires__isnull=True)
    expired = GatewayRequest.objects.filter(stale, status=Status.RUNNING, kind__in=SIGN_IN_KINDS)
    changed = 0
    for request in expired:
        changed += (
            GatewayRequest.objects.filter(pk=request.pk, status=Status.RUNNING, claimed_by=request.claimed_by)
            .filter(stale)
            .update(
                status=Status.FAILED,
                finished=when,
                claim_expires=None,
                params=_without_secrets(request.params),
                error=(
                    f"the gateway running this sign-in step ({request.claimed_by or 'unknown'}) stopped "
                    "before it finished: start the sign-in again"
                ),
            )
        )
    if changed:
        logger.warning("failed %s sign-in request(s) left running by a stopped gateway", changed)
    return changed


def request_finish(*, request_id: int, result: dict[str, Any] | None = None, error: str = "") -> None:
    status = Status.FAILED if error else Status.DONE
    GatewayRequest.objects.filter(pk=request_id).update(
        status=status, result=result or {}, error=error[:5000], finished=now(), claim_expires=None
    )
    request_forget_secrets(request_id=request_id)


def _without_secrets(params: dict[str, Any] | None) -> dict[str, Any]:
    return {k: ("" if k in SECRET_PARAMS else v) for k, v in (params or {}).items()}


def request_forget_secrets(*, request_id: int) -> None:
    """Blank a sign-in code or password: once its request ran, nothing needs it."""
    request = GatewayRequest.objects.filter(pk=request_id, kind__in=SIGN_IN_KINDS).only("params").first()
    if request is not None and any(request.params.get(k) for k in SECRET_PARAMS):
        GatewayRequest.objects.filter(pk=request_id).update(params=_without_secrets(request.params))


def otp_random_id(request: GatewayRequest) -> int:
    # Fixed per request, so a send retried after a crash is deduplicated by Telegram; in the range
    # whose messages the mirror always stores redacted.
    return OTP_RANDOM_ID_BASE + request.pk


def _mirror_otp(*, agent_id: int, user_id: int, sent: SentMessage) -> None:
    """Store the sent code as a redacted mirror row, before its update can be ingested."""
    agent = Agent.objects.get(pk=agent_id)
    conversation = conversation_upsert(agent=agent, peer_id=user_id, kind="dm")
    message_record_sent(agent=agent, conversation=conversation, sent=sent, redacted=True)


def _refresh_profile(*, agent_id: int, details) -> dict[str, Any]:
    agent = Agent.objects.get(pk=agent_id)
    conversation = conversation_apply_details(agent=agent, details=details)
    # A direct get_details says both ways whether the user is blocked (a dialog list does not).
    Conversation.objects.filter(pk=conversation.pk).update(blocked=details.blocked)
    return {
        "title": details.title,
        "username": details.username,
        "about": details.about,
        "muted": details.muted,
        "blocked": details.blocked,
    }


async def execute_request(request: GatewayRequest, transport: Transport) -> tuple[dict[str, Any], str]:
    """Run one request; returns (result, error)."""
    params = request.params or {}
    handler = ACCOUNT_HANDLERS.get(request.kind)
    if handler is not None:
        return await account_request_run(request, transport, handler)
    if request.kind in SIGN_IN_KINDS:
        # The gateway runs this agent, so its session works: there is nothing to sign in.
        return {"state": "signed_in", "note": "the agent is already signed in and running"}, ""
    try:
        if request.kind == GatewayRequest.Kind.SEND_OTP:
            user_id = int(params["user_id"])
            sent = await transport.send_text(user_id, str(params["text"]), random_id=otp_random_id(request))
            try:
                await sync_to_async(_mirror_otp)(agent_id=request.agent_id, user_id=user_id, sent=sent)
            except Exception:  # the code went out; the random id still keeps the mirror redacted
                logger.exception("gateway request %s: could not record the sent code", request.pk)
            return {"message_id": sent.message_id}, ""
        if request.kind == GatewayRequest.Kind.IMPORT_STICKER_SET:
            return await sticker_set_import(transport=transport, short_name=str(params["short_name"])), ""
        if request.kind == GatewayRequest.Kind.BACKFILL_PAGE:
            # Not an account request: a backfill's pages would flood the activity stream.
            return await backfill_page(request, transport), ""
        if request.kind == GatewayRequest.Kind.REFRESH_PROFILE:
            details = await transport.get_details(int(params["peer_id"]))
            return await sync_to_async(_refresh_profile)(agent_id=request.agent_id, details=details), ""
        return {}, f"gateway request kind {request.kind!r} is not supported by this gateway"
    except Exception as exc:
        return {}, request_error(request, exc)
