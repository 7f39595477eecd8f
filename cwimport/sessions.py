"""Bringing each agent's `telegram.session` into Cindy's encrypted session store.

The DC, auth key, entity cache and update state are kept, so `runagents` connects without a new login
and Telethon's catch-up fetches what arrived while neither system ran.
"""

from __future__ import annotations

from django.db import transaction

from agents.models import Agent, AgentLease, TelegramEntity, TelegramSession, TelegramUpdateState
from agents.telethon_session import decrypt_auth_key, encrypt_auth_key
from cindy_site import clock
from cwimport.matching import AgentMatcher
from cwimport.report import Outcome
from cwimport.session_file import SessionFile, SessionInUse, check_not_in_use


def _stored_state(agent: Agent) -> tuple:
    row = TelegramSession.objects.filter(agent=agent).first()
    key = (
        decrypt_auth_key(row.auth_key_encrypted, agent_name=agent.name)
        if row and row.auth_key_encrypted
        else None
    )
    session = (row.dc_id, row.server_address, row.port, key, row.takeout_id) if row else None
    states = {
        s.entity_id: (s.pts, s.qts, s.date, s.seq) for s in TelegramUpdateState.objects.filter(agent=agent)
    }
    entities = {
        e.entity_id: (e.access_hash, e.username, e.phone, e.name)
        for e in TelegramEntity.objects.filter(agent=agent)
    }
    return session, states, entities


def _file_state(f: SessionFile) -> tuple:
    session = (f.dc_id, f.server_address, f.port, f.auth_key, f.takeout_id)
    entities = {
        e[0]: (
            e[1],
            (e[2] or None) and e[2][:64],
            (e[3] or None) and e[3][:32],
            (e[4] or None) and e[4][:255],
        )
        for e in f.entities
    }
    return session, dict(f.update_states), entities


def session_import(*, agent: Agent, matcher: AgentMatcher, quiet_seconds: float) -> str:
    """Import one agent's session file; return its report line. Never overwrites a different login."""
    path = matcher.session_path(agent)
    if path is None:
        return f"{agent.name}: no --state-dir given"
    if agent.pk in matcher.session_errors:
        return f"{agent.name}: ERROR {matcher.session_errors[agent.pk]}"
    f = matcher.sessions.get(agent.pk)
    if f is None:
        return f"{agent.name}: no session file at {path} (log in with telegram_login)"
    try:
        check_not_in_use(path, quiet_seconds=quiet_seconds)
    except SessionInUse as exc:
        return f"{agent.name}: REFUSED {exc}"
    lease = AgentLease.objects.filter(agent=agent, expires_at__gt=clock.now()).first()
    if lease is not None:
        return f"{agent.name}: REFUSED gateway {lease.holder} runs this agent now: stop runagents first"
    if not f.auth_key:
        return f"{agent.name}: {path} holds no auth key (never logged in): log in with telegram_login"
    stored = _stored_state(agent)
    wanted = _file_state(f)
    if stored[0] is not None and stored[0][3] is not None and stored[0][3] != f.auth_key:
        return (
            f"{agent.name}: KEPT Cindy's own login (a different auth key than {path}); to use the original's, "
            f"log the agent out in Cindy first"
        )
    own_id = matcher.own_id(agent)
    detail = f"DC {f.dc_id}, {len(f.entities)} entities, {len(f.update_states)} update states"
    if stored == wanted and (own_id is None or agent.telegram_user_id == own_id):
        return f"{agent.name}: {Outcome.UNCHANGED} ({detail})"
    outcome = Outcome.CREATED if stored[0] is None else Outcome.UPDATED
    with transaction.atomic():
        _write(agent, f)
        if own_id and agent.telegram_user_id != own_id:
            agent.telegram_user_id = own_id
            agent.save(update_fields=["telegram_user_id", "updated"])
    note = "" if own_id else "; its Telegram user id is unknown: runagents records it at the first connection"
    return f"{agent.name}: {outcome} from {path} ({detail}){note}"


def _write(agent: Agent, f: SessionFile) -> None:
    TelegramSession.objects.update_or_create(
        agent=agent,
        defaults={
            "dc_id": f.dc_id,
            "server_address": f.server_address,
            "port": f.port,
            "auth_key_encrypted": encrypt_auth_key(f.auth_key),
            "takeout_id": f.takeout_id,
        },
    )
    TelegramUpdateState.objects.filter(agent=agent).exclude(entity_id__in=list(f.update_states)).delete()
    for entity_id, (pts, qts, date, seq) in f.update_states.items():
        TelegramUpdateState.objects.update_or_create(
            agent=agent, entity_id=entity_id, defaults={"pts": pts, "qts": qts, "date": date, "seq": seq}
        )
    for entity_id, access_hash, username, phone, name, date in f.entities:
        TelegramEntity.objects.update_or_create(
            agent=agent,
            entity_id=entity_id,
            defaults={
                "access_hash": access_hash,
                "username": (username or None) and username[:64],
                "phone": (phone or None) and phone[:32],
                "name": (name or None) and name[:255],
                "date": date,
            },
        )
