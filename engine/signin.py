"""Telegram sign-in from the web: the `telegram_login` flow run by a gateway, one request per step.

An agent without a working session cannot be held the usual way (its connection fails and it is
stopped), so `SignInStep` serves sign-in requests for telegram agents that this gateway may run but
does not hold. For each agent with pending sign-in requests it takes the agent's lease (so no other
process uses the account meanwhile), runs the requests with a login client on the agent's stored
session, and releases the lease. Each step is stateless between requests:

1. `sign_in_start` asks Telegram to send a code; the result keeps the `phone_code_hash`.
2. `sign_in_code` signs in with the code and that hash; Telegram may then ask for the password.
3. `sign_in_password` completes a two-step verification.

The session's auth key is stored after each step, so the code and password apply to the same key.
Telethon is imported only when a sign-in runs: a gateway of sandbox agents never loads it.
Codes and passwords live in the request's params only until it runs: they are blanked when it
finishes, and never logged or written to the activity stream. A successful sign-in records the
account's user id and clears a stop caused by a session error, so the gateway picks the agent up.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings

from agents.models import Agent, GatewayRequest
from agents.models import Transport as TransportKind
from cindy_site.lookups import Ids
from conversations.models import ActivityEvent
from conversations.services.activity import record_event
from engine.gateway_context import GatewayContext
from engine.leases import lease_acquire, lease_release
from engine.requests import SIGN_IN_KINDS, request_finish, requests_claim

logger = logging.getLogger("engine.gateway")
Kind = GatewayRequest.Kind


def make_login_client(session) -> Any:
    """The Telethon client a sign-in uses (replaced by a double at the network edge in tests)."""
    from agents.management.commands.telegram_login import make_client

    return make_client(session, settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH)


def signin_pending_agents(*, names: list[str], held: list[int]) -> list[Agent]:
    """Telegram agents this gateway may run, not held by it, with a pending sign-in request.

    Asked at every full pass and almost always empty: first whether any sign-in request is pending
    at all (the pending requests' index), and only then the agents of those requests, leaving out the
    held ones (`in_ids`: a thousand ids prepared through `pk__in` cost more than the rest of the step)."""
    pending = GatewayRequest.objects.filter(status=GatewayRequest.Status.PENDING, kind__in=SIGN_IN_KINDS)
    if not pending.exists():
        return []
    qs = Agent.objects.filter(
        transport=TransportKind.TELEGRAM, disabled=False, pk__in=pending.values("agent_id")
    ).exclude(pk__in_ids=Ids(held))
    if names:
        qs = qs.filter(name__in=names)
    return list(qs)


def _signed_in(*, agent_id: int, user_id: int, username: str) -> None:
    agent = Agent.objects.get(pk=agent_id)
    agent.telegram_user_id, agent.telegram_username = user_id, username
    fields = ["telegram_user_id", "telegram_username", "updated"]
    if agent.stopped:
        # Stopped by a session error (not logged in, key revoked...): a fresh sign-in is the fix.
        agent.stopped, agent.last_error, agent.last_error_at = False, "", None
        fields += ["stopped", "last_error", "last_error_at"]
    agent.save(update_fields=fields)


def _record(*, agent_id: int, kind: str, summary: str, request_id: int, ok: bool) -> None:
    record_event(
        ActivityEvent.Kind.INFO if ok else ActivityEvent.Kind.AGENT_ERROR,
        agent_id=agent_id,
        summary=summary,
        data={"gateway_request": request_id, "kind": kind, "ok": ok},
    )


class SignInFailed(Exception):
    """A sign-in step Telegram refused; the message tells the operator what to do next."""


def sign_in_errors() -> dict[type, str]:
    """Telethon's errors a sign-in step can meet, each with what the operator should do."""
    from telethon import errors

    return {
        errors.PhoneNumberInvalidError: 'Telegram rejects the phone number {phone}: set "Agent Phone" in '
        "full international form (e.g. +15551234567), then start again",
        errors.PhoneNumberBannedError: "Telegram has banned the phone number {phone}: this account cannot sign in",
        errors.PhoneCodeInvalidError: "the code is wrong: type the code Telegram sent, or start again for a new one",
        errors.PhoneCodeExpiredError: "the code has expired (or was shared in a chat, which cancels it): start "
        "again and type the new code promptly",
        errors.PhoneCodeEmptyError: "no code was given: type the code Telegram sent",
        errors.PasswordHashInvalidError: "the two-step verification password is wrong: try again",
    }


async def _run_step(client, agent: Agent, request: GatewayRequest) -> dict[str, Any]:
    from telethon import errors
    from telethon.tl import functions

    params = request.params or {}
    if request.kind == Kind.SIGN_IN_START:
        if await client.is_user_authorized():
            return await _finish(client, agent)
        sent = await client.send_code_request(agent.phone)
        return {
            "state": "code_sent",
            "phone_code_hash": sent.phone_code_hash,
            "via": type(sent.type).__name__.removeprefix("SentCodeType"),
        }
    if request.kind == Kind.SIGN_IN_CODE:
        try:
            await client.sign_in(
                phone=agent.phone, code=str(params["code"]), phone_code_hash=str(params["phone_code_hash"])
            )
        except errors.SessionPasswordNeededError:
            password = await client(functions.account.GetPasswordRequest())
            return {"state": "password_needed", "hint": getattr(password, "hint", None) or ""}
        return await _finish(client, agent)
    await client.sign_in(password=str(params["password"]))
    return await _finish(client, agent)


async def _finish(client, agent: Agent) -> dict[str, Any]:
    me = await client.get_me()
    if me is None:
        raise SignInFailed("Telegram did not accept the sign-in: start again")
    await sync_to_async(_signed_in)(agent_id=agent.pk, user_id=me.id, username=me.username or "")
    name = " ".join(p for p in (me.first_name, me.last_name) if p)
    return {"state": "signed_in", "user_id": me.id, "username": me.username or "", "name": name}


async def signin_execute(*, agent: Agent, request: GatewayRequest, holder: str) -> tuple[dict[str, Any], str]:
    """Run one sign-in request on a login client over the agent's stored session; (result, error)."""
    from telethon import errors

    from agents.telethon_session import SessionKeyError, open_session_for

    known = sign_in_errors()
    try:
        session = await sync_to_async(open_session_for)(agent, holder)
    except SessionKeyError as exc:
        return {}, str(exc)
    client = make_login_client(session)
    try:
        await client.connect()
        return await _run_step(client, agent, request), ""
    except KeyError as exc:
        return {}, f"{request.get_kind_display()} request {request.pk} is missing parameter {exc}"
    except errors.FloodWaitError as exc:
        return {}, f"Telegram asks to wait {exc.seconds}s before trying again"
    except SignInFailed as exc:
        return {}, str(exc)
    except tuple(known) as exc:
        return {}, known[type(exc)].format(phone=agent.phone)
    except errors.RPCError as exc:
        return {}, f"Telegram refused: {type(exc).__name__}"
    except (ConnectionError, OSError) as exc:
        return {}, f"cannot reach Telegram: {type(exc).__name__}"
    finally:
        try:
            await client.disconnect()
        finally:
            await session.flush_async()


class SignInStep:
    """Serves sign-in requests for the telegram agents this gateway may run but does not hold."""

    name = "signin"

    def __init__(self, context: GatewayContext) -> None:
        self.context = context

    async def run(self) -> bool:
        ctx = self.context
        agents = await sync_to_async(signin_pending_agents)(names=ctx.names, held=list(ctx.clients))
        for agent in agents:
            result = await sync_to_async(lease_acquire)(agent=agent, holder=ctx.gateway_id)
            if not result.acquired:
                continue  # the gateway holding it answers (the requests step), or its lease runs out first
            try:
                await self._signin_requests(agent)
            finally:
                if agent.pk not in ctx.clients:
                    await sync_to_async(lease_release)(holder=ctx.gateway_id, agent_ids=[agent.pk])
        return bool(agents)

    async def _signin_requests(self, agent: Agent) -> None:
        holder = self.context.gateway_id
        claimed = await sync_to_async(requests_claim)(agent_id=agent.pk, holder=holder)
        for request in claimed:
            if request.kind in SIGN_IN_KINDS:
                result, error = await signin_execute(agent=agent, request=request, holder=holder)
            else:
                result, error = {}, f"agent {agent.name} is not signed in to Telegram: sign it in first"
            await sync_to_async(request_finish)(request_id=request.pk, result=result, error=error)
            state = result.get("state", "")
            summary = (
                f"Telegram sign-in ({request.get_kind_display()}): request failed: {error}"
                if error
                else f"Telegram sign-in: {state.replace('_', ' ')}"
            )
            await sync_to_async(_record)(
                agent_id=agent.pk, kind=request.kind, summary=summary, request_id=request.pk, ok=not error
            )
            logger.info(
                "agent %s: sign-in request %s: %s", agent.name, request.pk, "failed" if error else state
            )
