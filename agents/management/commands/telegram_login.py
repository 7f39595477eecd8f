"""Log an agent's Telegram account in and store its session in the database.

    python manage.py telegram_login Heidi
    python manage.py telegram_login --all

Telegram sends a code to the account's other devices (or by SMS); type it when asked, then the
two-step verification password if the account has one. The session is stored encrypted with
CINDY_SESSION_KEY, and the account's user id and username are recorded on the agent.

The command holds the agent's gateway lease while it runs, so it never logs in an account that a running
gateway is using (Telegram revokes a session used from two connections at once).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import getpass
import os
import socket
import uuid

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError, transaction
from django.db.models import Q
from telethon import errors

from agents.models import Agent, AgentLease, Transport
from agents.telegram_server import point_at_configured_server
from agents.telethon_session import SessionKeyError, open_session_for, session_cipher
from cindy_site import clock


def make_client(session, api_id: str, api_hash: str):
    """The Telethon client used to log in (replaced by a double in tests)."""
    from telethon import TelegramClient

    point_at_configured_server(session)
    return TelegramClient(session, int(api_id), api_hash, receive_updates=False)


def ask(prompt: str, *, secret: bool = False) -> str:
    """Read one answer from the operator (replaced in tests)."""
    return (getpass.getpass(prompt) if secret else input(prompt)).strip()


class LoginFailed(Exception):
    pass


def lease_take(*, agent: Agent, holder: str, seconds: int) -> None:
    """Take the agent's lease for `holder`, unless a live lease belongs to someone else."""
    now = clock.now()
    fields = {"holder": holder, "heartbeat_at": now, "expires_at": now + dt.timedelta(seconds=seconds)}
    with transaction.atomic():
        taken = (
            AgentLease.objects.filter(agent=agent)
            .filter(Q(holder=holder) | Q(expires_at__lte=now))
            .update(acquired_at=now, **fields)
        )
        if taken:
            return
        if not AgentLease.objects.filter(agent=agent).exists():
            try:
                with transaction.atomic():
                    AgentLease.objects.create(agent=agent, acquired_at=now, **fields)
                return
            except IntegrityError:
                pass
    lease = AgentLease.objects.get(agent=agent)
    raise LoginFailed(
        f"agents/{agent.name}: gateway {lease.holder} is running this agent (lease until "
        f"{lease.expires_at.isoformat()}): stop runagents for it, then log in again"
    )


def lease_renew(*, agent: Agent, holder: str, seconds: int) -> None:
    now = clock.now()
    AgentLease.objects.filter(agent=agent, holder=holder).update(
        heartbeat_at=now, expires_at=now + dt.timedelta(seconds=seconds)
    )


def lease_release(*, agent: Agent, holder: str) -> None:
    AgentLease.objects.filter(agent=agent, holder=holder).delete()


class Command(BaseCommand):
    help = "Log agents' Telegram accounts in (phone code and 2FA password) and store their sessions."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", metavar="NAME", help="Agent names")
        parser.add_argument("--all", action="store_true", help="Every enabled telegram agent")

    def handle(self, *args, names: list[str], all: bool, **options):
        self._check_settings()
        agents = self._agents(names, all)
        failures = []
        for agent in agents:
            try:
                user = self._login(agent)
            except LoginFailed as exc:
                failures.append(str(exc))
                self.stderr.write(str(exc))
                continue
            self.stdout.write(f"agents/{agent.name}: logged in as {user}")
        if failures:
            raise CommandError(f"{len(failures)} of {len(agents)} logins failed:\n" + "\n".join(failures))

    def _check_settings(self) -> None:
        missing = [v for v in ("TELEGRAM_API_ID", "TELEGRAM_API_HASH") if not getattr(settings, v, "")]
        if missing:
            raise CommandError(
                f"{' and '.join(missing)} not set: create an application at https://my.telegram.org "
                f"(API development tools) and put TELEGRAM_API_ID and TELEGRAM_API_HASH in .env"
            )
        if not str(settings.TELEGRAM_API_ID).isdigit():
            raise CommandError(f"TELEGRAM_API_ID is {settings.TELEGRAM_API_ID!r}: it must be a number")
        try:
            session_cipher()
        except SessionKeyError as exc:
            raise CommandError(str(exc)) from None

    def _agents(self, names: list[str], all_agents: bool) -> list[Agent]:
        if all_agents == bool(names):
            raise CommandError("Name the agents to log in, or pass --all (not both)")
        if all_agents:
            agents = list(Agent.objects.filter(transport=Transport.TELEGRAM, disabled=False))
            if not agents:
                raise CommandError("No enabled agent uses the telegram transport")
            return agents
        found = {a.name: a for a in Agent.objects.filter(name__in=names)}
        unknown = [n for n in names if n not in found]
        if unknown:
            raise CommandError(
                f"No agent named {', '.join(unknown)}: import it first (manage.py importagents)"
            )
        return [found[n] for n in names]

    def _login(self, agent: Agent) -> str:
        if not agent.phone:
            raise LoginFailed(f'agents/{agent.name}: no phone number: set "Agent Phone" in its persona file')
        holder = f"login:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        seconds = settings.CINDY_LEASE_SECONDS
        lease_take(agent=agent, holder=holder, seconds=seconds)
        try:
            # async_to_sync keeps ORM calls made through sync_to_async on this thread's connection.
            return async_to_sync(self._login_async)(agent, holder, seconds)
        finally:
            lease_release(agent=agent, holder=holder)

    async def _login_async(self, agent: Agent, holder: str, seconds: int) -> str:
        session = await sync_to_async(open_session_for)(agent, holder)
        client = make_client(session, settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH)
        heartbeat = asyncio.ensure_future(self._heartbeat(agent, holder, seconds))
        try:
            await client.connect()
            if not await client.is_user_authorized():
                await self._sign_in(client, agent)
            me = await client.get_me()
            agent.telegram_user_id = me.id
            agent.telegram_username = me.username or ""
            fields = ["telegram_user_id", "telegram_username", "updated"]
            if agent.stopped and agent.last_error:
                # Stopped by a session error (not logged in, key revoked...): a fresh login is the fix.
                agent.stopped, agent.last_error, agent.last_error_at = False, "", None
                fields += ["stopped", "last_error", "last_error_at"]
            await sync_to_async(agent.save)(update_fields=fields)
            await session.flush_async()
            return f"{me.username and '@' + me.username or me.first_name or ''} (user id {me.id})"
        except (ConnectionError, OSError) as exc:
            raise LoginFailed(f"agents/{agent.name}: cannot reach Telegram: {exc}") from None
        finally:
            heartbeat.cancel()
            await client.disconnect()

    async def _heartbeat(self, agent: Agent, holder: str, seconds: int) -> None:
        while True:
            await asyncio.sleep(max(1, seconds // 3))
            await sync_to_async(lease_renew)(agent=agent, holder=holder, seconds=seconds)

    async def _sign_in(self, client, agent: Agent) -> None:
        name, phone = agent.name, agent.phone
        try:
            await client.send_code_request(phone)
        except errors.PhoneNumberBannedError:
            raise LoginFailed(
                f"agents/{name}: Telegram has banned the phone number {phone}: this account cannot log in; "
                f"contact Telegram support (recover@telegram.org) or use another number"
            ) from None
        except errors.PhoneNumberInvalidError:
            raise LoginFailed(
                f'agents/{name}: Telegram rejects the phone number {phone!r}: set "Agent Phone" in full '
                f"international form, e.g. +15551234567"
            ) from None
        except errors.FloodWaitError as exc:
            raise LoginFailed(
                f"agents/{name}: Telegram asks to wait {exc.seconds}s before sending another code"
            ) from None
        code = await sync_to_async(ask, thread_sensitive=False)(f"agents/{name}: code sent to {phone}: ")
        try:
            await client.sign_in(phone=phone, code=code)
        except errors.SessionPasswordNeededError:
            await self._password(client, name)
        except errors.PhoneCodeInvalidError:
            raise LoginFailed(
                f"agents/{name}: the code {code!r} is wrong: run telegram_login {name} again and type the "
                f"code Telegram sent"
            ) from None
        except errors.PhoneCodeExpiredError:
            raise LoginFailed(
                f"agents/{name}: the code has expired (or was shared in a chat, which makes Telegram "
                f"cancel it): run telegram_login {name} again and type the new code promptly"
            ) from None
        except errors.PhoneNumberBannedError:
            raise LoginFailed(f"agents/{name}: Telegram has banned the phone number {phone}") from None

    async def _password(self, client, name: str) -> None:
        password = await sync_to_async(ask, thread_sensitive=False)(
            f"agents/{name}: two-step verification password: ", secret=True
        )
        try:
            await client.sign_in(password=password)
        except errors.PasswordHashInvalidError:
            raise LoginFailed(
                f"agents/{name}: the two-step verification password is wrong: run telegram_login {name} again"
            ) from None
