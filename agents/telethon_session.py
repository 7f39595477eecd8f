"""Telethon sessions stored in the database, with the auth key encrypted at rest.

`DatabaseSession` keeps Telethon's whole session (data centre, auth key, update state, entity cache) in
`TelegramSession`, `TelegramUpdateState` and `TelegramEntity`. A StringSession or a `.session` file would
lose the update state or scatter secrets on disk; with the state in the database, a restarted gateway
catches up from where the last one stopped.

How database I/O stays off the gateway's event loop: Telethon calls session methods synchronously
(`set_update_state`, `process_entities`, the `auth_key` setter...). Those only touch an in-memory copy
(this class extends `MemorySession`) and mark what changed. Telethon then calls `save()` / `close()`
through `utils.maybe_async`: when an event loop is running in this thread, `save()` returns a coroutine
that writes the changes through `sync_to_async`, so the ORM never runs on the loop; without a loop it
writes at once. The gateway may also `await session.flush_async()` itself.

Only the gateway holding the agent's `AgentLease` may open a session (one account, one connection:
Telegram revokes a key used from two places at once, AUTH_KEY_DUPLICATED).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import logging
import warnings
from collections.abc import Iterable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from telethon import utils
from telethon.crypto import AuthKey
from telethon.sessions import MemorySession
from telethon.tl import types

from agents.models import Agent, AgentLease, TelegramEntity, TelegramSession, TelegramUpdateState
from agents.selectors import lease_held
from agents.session_cipher import InvalidToken, SessionCipher, hkdf_sha256
from cindy_site import clock, rows

logger = logging.getLogger(__name__)

# Telethon warns on every awaitable session result; ours are deliberate (see the module docstring).
warnings.filterwarnings("ignore", message="Using async sessions support is an experimental feature")

EntityRow = tuple[int, int, Any, Any, Any]  # (marked id, access hash, username, phone, name)

#: What a flush writes of each update state and cached entity, upserted on (agent, entity) in one
#: plain statement each (`cindy_site.rows.upsert`): every connected account flushes its state once
#: after connecting and then about once a minute while it has traffic, 1,000 accounts on a gateway.
KEY = ("agent", "entity_id")
STATE_COLUMNS = ("agent", "entity_id", "pts", "qts", "date", "seq")
ENTITY_COLUMNS = ("agent", "entity_id", "access_hash", "username", "phone", "name")

LOGIN_HINT = "run python manage.py telegram_login {name}, or use Telegram sign-in on its admin page"


class SessionLeaseError(Exception):
    """This process does not hold the agent's lease, so it may not open the agent's session."""


class SessionKeyError(ImproperlyConfigured):
    """CINDY_SESSION_KEY is missing or cannot decrypt the stored key."""


def session_cipher() -> SessionCipher:
    secret = settings.CINDY_SESSION_KEY
    if not secret:
        raise SessionKeyError(
            "CINDY_SESSION_KEY is not set: Telegram auth keys are stored encrypted with it. Generate one "
            "with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`, put "
            "CINDY_SESSION_KEY=<value> in .env, and keep it: a different key cannot read stored sessions."
        )
    # HKDF turns any operator-chosen secret into the 32 bytes Fernet needs.
    derived = hkdf_sha256(secret.encode(), salt=b"cindy-telegram-session", info=b"auth-key")
    return SessionCipher(base64.urlsafe_b64encode(derived))


def encrypt_auth_key(raw: bytes) -> bytes:
    return session_cipher().encrypt(raw)


def decrypt_auth_key(token: bytes, *, agent_name: str) -> bytes:
    try:
        return session_cipher().decrypt(bytes(token))
    except InvalidToken:
        raise SessionKeyError(
            f"agents/{agent_name}: the stored Telegram session cannot be decrypted with the current "
            f"CINDY_SESSION_KEY: restore the key it was saved with, or log in again "
            f"({LOGIN_HINT.format(name=agent_name)})"
        ) from None


def check_lease(agent: Agent, gateway_id: str) -> None:
    """Raise SessionLeaseError unless `gateway_id` holds a live lease on `agent` (injected clock)."""
    lease = AgentLease.objects.filter(agent_id=agent.pk).first()
    now = clock.now()
    if lease is None:
        raise SessionLeaseError(
            f"agents/{agent.name}: {gateway_id} holds no lease on this agent, so it may not open its "
            f"Telegram session: take the lease first (runagents and telegram_login do)"
        )
    if lease.holder != gateway_id:
        raise SessionLeaseError(
            f"agents/{agent.name}: the Telegram session belongs to gateway {lease.holder} (lease until "
            f"{lease.expires_at.isoformat()}): stop that gateway or wait for its lease to expire"
        )
    if lease.expires_at <= now:
        raise SessionLeaseError(
            f"agents/{agent.name}: the lease of {gateway_id} expired at {lease.expires_at.isoformat()}: "
            f"renew it before opening the Telegram session"
        )


#: How far the account's stored update date may fall behind while its counters stay the same. Telethon's
#: message box moves the date with every update container it applies (a contact's online status among
#: them) and every `getDifference`, so the state it hands over each minute had a new date alone for
#: most connected accounts: a database write per account per minute (1,000 agents: about 17 a second)
#: that catches nothing up, since the counters say where the next `getDifference` starts. Such a date
#: is written with the next change of a counter, or once the stored one is this old.
ACCOUNT_DATE_REFRESH = dt.timedelta(hours=1)


def _state_key(entity_id: int, state: types.updates.State) -> tuple:
    """What of an update state is worth writing: its counters, and for the account's own state
    (entity 0) its date; Telethon stamps a channel's state with the time it hands it over, which
    carries nothing (channels are caught up by pts alone)."""
    date = _aware(state.date) if entity_id == 0 and state.date is not None else None
    return (state.pts, state.qts, state.seq, date)


def _state_changed(stored: tuple | None, key: tuple) -> bool:
    """Whether an update state (`_state_key`) must be written over the stored one: a counter moved,
    or the account's date did by ACCOUNT_DATE_REFRESH or more (or was not stored)."""
    if stored is None or stored[:3] != key[:3]:
        return True
    stored_date, date = stored[3], key[3]
    if stored_date == date:
        return False
    if stored_date is None or date is None:
        return True
    return date - stored_date >= ACCOUNT_DATE_REFRESH


def _aware(value: dt.datetime | None) -> dt.datetime:
    if value is None:
        return clock.now()
    if value.tzinfo is None:
        # Telethon stamps channel states with a naive "now"; any time works for them.
        return value.replace(tzinfo=dt.UTC)
    return value


class DatabaseSession(MemorySession):
    """A Telethon session kept in the database for one agent. See the module docstring."""

    def __init__(self, agent: Agent, *, gateway_id: str) -> None:
        check_lease(agent, gateway_id)
        super().__init__()
        self.agent_id = agent.pk
        self.agent_name = agent.name
        self.gateway_id = gateway_id
        self._rows: dict[int, EntityRow] = {}
        self._dirty_session = False
        #: Each update state as stored (`_state_key`): Telethon hands its state over about once a
        #: minute per client, changed or not, and only a changed one is written (`_state_changed`).
        self._stored_states: dict[int, tuple] = {}
        self._dirty_states: set[int] = set()
        self._dirty_entities: set[int] = set()
        self._load()

    def __repr__(self) -> str:
        # Never include the key: sessions end up in tracebacks and logs.
        state = "authorised" if self._auth_key else "no auth key"
        return f"<DatabaseSession agent={self.agent_name!r} dc={self._dc_id} {state}>"

    __str__ = __repr__

    # --- loading ----------------------------------------------------------------------------------

    def _load(self) -> None:
        row = TelegramSession.objects.filter(agent_id=self.agent_id).first()
        if row is not None:
            self._dc_id = row.dc_id
            self._server_address = row.server_address or None
            self._port = row.port
            self._takeout_id = row.takeout_id
            if row.auth_key_encrypted:
                raw = decrypt_auth_key(row.auth_key_encrypted, agent_name=self.agent_name)
                self._auth_key = AuthKey(data=raw)
        for state in TelegramUpdateState.objects.filter(agent_id=self.agent_id):
            self._update_states[state.entity_id] = loaded = types.updates.State(
                pts=state.pts, qts=state.qts, date=state.date, seq=state.seq, unread_count=0
            )
            self._stored_states[state.entity_id] = _state_key(state.entity_id, loaded)
        for ent in TelegramEntity.objects.filter(agent_id=self.agent_id):
            self._rows[ent.entity_id] = (ent.entity_id, ent.access_hash, ent.username, ent.phone, ent.name)

    # --- what Telethon changes (memory only; written by flush) -------------------------------------

    def set_dc(self, dc_id, server_address, port):
        super().set_dc(dc_id, server_address, port)
        self._dirty_session = True

    @MemorySession.auth_key.setter
    def auth_key(self, value):
        self._auth_key = value
        self._dirty_session = True

    @MemorySession.takeout_id.setter
    def takeout_id(self, value):
        self._takeout_id = value
        self._dirty_session = True

    def set_update_state(self, entity_id, state):
        super().set_update_state(entity_id, state)
        if _state_changed(self._stored_states.get(entity_id), _state_key(entity_id, state)):
            self._dirty_states.add(entity_id)

    def process_entities(self, tlo):
        for row in self._entities_to_rows(tlo):
            if self._rows.get(row[0]) != row:
                self._rows[row[0]] = row
                self._dirty_entities.add(row[0])

    def get_entity_rows_by_phone(self, phone):
        return next(((r[0], r[1]) for r in self._rows.values() if r[3] == phone), None)

    def get_entity_rows_by_username(self, username):
        return next(((r[0], r[1]) for r in self._rows.values() if r[2] == username), None)

    def get_entity_rows_by_name(self, name):
        return next(((r[0], r[1]) for r in self._rows.values() if r[4] == name), None)

    def get_entity_rows_by_id(self, id, exact=True):
        if exact:
            row = self._rows.get(id)
            return (row[0], row[1]) if row else None
        for candidate in (
            utils.get_peer_id(types.PeerUser(id)),
            utils.get_peer_id(types.PeerChat(id)),
            utils.get_peer_id(types.PeerChannel(id)),
        ):
            row = self._rows.get(candidate)
            if row:
                return row[0], row[1]
        return None

    @property
    def has_changes(self) -> bool:
        return bool(self._dirty_session or self._dirty_states or self._dirty_entities)

    # --- writing ----------------------------------------------------------------------------------

    def save(self):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self.flush()
            return None
        return self.flush_async()

    def close(self):
        return self.save()

    async def flush_async(self) -> None:
        if self.has_changes:
            await sync_to_async(self.flush, thread_sensitive=True)()

    def flush(self) -> None:
        """Write what changed since the last flush. Skipped (with a warning) once the lease is lost."""
        if not self.has_changes:
            return
        if not lease_held(agent_id=self.agent_id, holder=self.gateway_id, at=clock.now()):
            logger.warning(
                "agents/%s: not saving the Telegram session: %s no longer holds the lease",
                self.agent_name,
                self.gateway_id,
            )
            return
        states, self._dirty_states = self._dirty_states, set()
        entities, self._dirty_entities = self._dirty_entities, set()
        write_session, self._dirty_session = self._dirty_session, False
        try:
            state_rows, entity_rows = self._state_rows(states), self._entity_rows(entities)
            # One statement commits by itself; more are written together.
            together = (write_session + bool(state_rows) + bool(entity_rows)) > 1
            with transaction.atomic() if together else contextlib.nullcontext():
                if write_session:
                    self._write_session()
                rows.upsert(TelegramUpdateState, state_rows, names=STATE_COLUMNS, key=KEY)
                rows.upsert(TelegramEntity, entity_rows, names=ENTITY_COLUMNS, key=KEY)
        except Exception:
            # Keep the changes for the next flush rather than losing them.
            self._dirty_states |= states
            self._dirty_entities |= entities
            self._dirty_session = self._dirty_session or write_session
            raise

    def _write_session(self) -> None:
        key = self._auth_key.key if self._auth_key else None
        TelegramSession.objects.update_or_create(
            agent_id=self.agent_id,
            defaults={
                "dc_id": self._dc_id or 0,
                "server_address": self._server_address or "",
                "port": self._port or 443,
                "auth_key_encrypted": encrypt_auth_key(key) if key else None,
                "takeout_id": self._takeout_id,
            },
        )

    def _state_rows(self, entity_ids: Iterable[int]) -> list[tuple]:
        """The rows of `STATE_COLUMNS` to write for these update states, each then stored as written."""
        out = []
        for entity_id in entity_ids:
            state = self._update_states.get(entity_id)
            if state is None:
                continue
            self._stored_states[entity_id] = _state_key(entity_id, state)
            out.append((self.agent_id, entity_id, state.pts, state.qts, _aware(state.date), state.seq))
        return out

    def _entity_rows(self, entity_ids: Iterable[int]) -> list[tuple]:
        """The rows of `ENTITY_COLUMNS` to write for these cached entities."""
        out = []
        for entity_id in entity_ids:
            row = self._rows.get(entity_id)
            if row is None:
                continue
            _, access_hash, username, phone, name = row
            out.append(
                (
                    self.agent_id,
                    entity_id,
                    access_hash,
                    (username or None) and username[:64],
                    (phone or None) and phone[:32],
                    (name or None) and name[:255],
                )
            )
        return out

    def delete(self):
        """Telethon calls this on log-out: forget everything stored for the account."""
        TelegramSession.objects.filter(agent_id=self.agent_id).delete()
        TelegramUpdateState.objects.filter(agent_id=self.agent_id).delete()
        TelegramEntity.objects.filter(agent_id=self.agent_id).delete()
        self._auth_key = None
        self._update_states.clear()
        self._rows.clear()


def open_session_for(agent: Agent, gateway_id: str) -> DatabaseSession:
    """The agent's session, for the gateway `gateway_id`; refused unless it holds the lease."""
    return DatabaseSession(agent, gateway_id=gateway_id)


def telegram_readiness_problems(agent: Agent) -> list[str]:
    """What keeps a telegram agent from running, each with its fix. Empty when it is ready."""
    problems = []
    for var in ("TELEGRAM_API_ID", "TELEGRAM_API_HASH"):
        if not getattr(settings, var, ""):
            problems.append(
                f"{var} is not set: create an application at https://my.telegram.org (API development "
                f"tools) and put {var}=<value> in .env"
            )
    if not settings.CINDY_SESSION_KEY:
        problems.append(
            "CINDY_SESSION_KEY is not set: it encrypts stored Telegram sessions; put a long random "
            "value in .env (python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if not agent.phone:
        problems.append(f'agents/{agent.name}: no phone number: set "Agent Phone" in its persona file')
    has_key = TelegramSession.objects.filter(agent_id=agent.pk, auth_key_encrypted__isnull=False).exists()
    # Telethon stores a key as soon as it connects, before any login; the user id is recorded only
    # once a login succeeded.
    if not has_key or agent.telegram_user_id is None:
        problems.append(
            f"agents/{agent.name}: not logged in to Telegram: {LOGIN_HINT.format(name=agent.name)}"
        )
    return problems


def telegram_readiness_error(agent: Agent) -> str | None:
    """One line naming everything missing for `agent`, or None when it can run on Telegram."""
    problems = telegram_readiness_problems(agent)
    return "; ".join(problems) if problems else None
