"""Batch forms of `SandboxTransport.history` and `mark_read`, for the gateway's planning dispatch.

The gateway syncs and marks read every chat whose turn it is about to plan (engine/dispatch.py); a
sandbox call is a few database queries, so answering a tick's chats one call at a time would cost the
gateway more than the chats' own work. These classmethods answer many (transport, ...) requests in one
trip to the database thread with a few queries for all of them, with the same result as the single
calls. For a subclass that overrides `history` or `mark_read` (a test double) they answer None, and
the caller (`engine.dispatch.transports_call`) makes the single calls instead. Each request's failure
is returned in its place, never raised.
"""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction

from cindy_site.bulk import update_by_pk
from conversations.transport.base import InboundMessage
from sandbox.models import SandboxMember, SandboxMessage
from sandbox.selectors import sandbox_members_to_read, sandbox_newest_message_ids, sandbox_own_reactions


def _plain(kind: type, name: str) -> bool:
    """Whether `kind` keeps the sandbox's own `name` method: the one of the class that mixes
    `SandboxBatch` in (`SandboxTransport`), which this module does not import, since it imports us."""
    mixer = next(k for k in kind.__mro__ if SandboxBatch in k.__bases__)
    return getattr(kind, name) is getattr(mixer, name)


def _chat_ids(requests: list[tuple], answers: list[Any]) -> dict[int, int]:
    """Request index → sandbox chat id; a request whose chat cannot be found gets its error."""
    chat_ids = {}
    for i, (transport, peer_id, *_) in enumerate(requests):
        try:
            chat_ids[i] = transport._chat_id_for_peer(peer_id)
        except Exception as exc:
            answers[i] = exc
    return chat_ids


class SandboxBatch:
    """Mixed into `SandboxTransport`; the requests' transports are SandboxTransports."""

    @classmethod
    async def history_many(
        cls, requests: list[tuple[SandboxBatch, int, int | None, int]]
    ) -> list[list[InboundMessage] | Exception] | None:
        """`history(peer_id, since_id=..., limit=...)` for each (transport, peer_id, since_id, limit).

        One query finds each chat's newest message; only chats with messages after `since_id` are
        read (the usual answer before planning is "nothing new").
        """
        if not _plain(cls, "history"):
            return None
        return await sync_to_async(cls._history_batch)(requests)

    @staticmethod
    def _history_batch(requests: list[tuple[SandboxBatch, int, int | None, int]]) -> list[Any]:
        answers: list[Any] = [None] * len(requests)
        chat_ids = _chat_ids(requests, answers)
        newest = _newest_ids(sorted(set(chat_ids.values()))) if chat_ids else {}
        for i, chat_id in chat_ids.items():
            transport, peer_id, since_id, limit = requests[i]
            top = newest.get(chat_id)
            if top is None or (since_id is not None and top <= since_id):
                answers[i] = []
                continue
            try:
                answers[i] = transport._history(peer_id, since_id, None, limit)
            except Exception as exc:
                answers[i] = exc
        return answers

    @classmethod
    async def mark_read_many(
        cls, requests: list[tuple[SandboxBatch, int, int]]
    ) -> list[Exception | None] | None:
        """`mark_read(peer_id, max_id)` for each (transport, peer_id, max_id), in one transaction."""
        if not _plain(cls, "mark_read"):
            return None
        return await sync_to_async(cls._mark_read_batch)(requests)

    @staticmethod
    def _mark_read_batch(requests: list[tuple[SandboxBatch, int, int]]) -> list[Any]:
        answers: list[Any] = [None] * len(requests)
        wanted: dict[tuple[int, int], int] = {}  # (chat id, account's user pk) → read up to
        for i, chat_id in _chat_ids(requests, answers).items():
            transport, _, max_id = requests[i]
            try:
                key = (chat_id, transport._require_me().pk)
            except Exception as exc:
                answers[i] = exc
                continue
            wanted[key] = max(wanted.get(key, max_id), max_id)
        if not wanted:
            return answers
        chats, users = {c for c, _ in wanted}, {u for _, u in wanted}
        with transaction.atomic():
            members = [  # plain SQL: sandbox/selectors.py
                row
                for row in sandbox_members_to_read(chat_ids=sorted(chats), user_ids=sorted(users))
                if (row[1], row[2]) in wanted
            ]
            behind = {
                pk: wanted[(chat_id, user_id)]
                for pk, chat_id, user_id, read_up_to, _marked in members
                if read_up_to < wanted[(chat_id, user_id)]
            }
            # One plain UPDATE for every member behind (cindy_site/bulk.py): one ORM `update()` per
            # distinct mark cost about 0.25 ms of CPU each, in every planning dispatch.
            update_by_pk(SandboxMember, "read_up_to", behind)
            # Reading a chat clears its unread mark.
            marked = [pk for pk, _chat, _user, _read, unread_mark in members if unread_mark]
            if marked:
                SandboxMember.objects.filter(pk__in=marked).update(unread_mark=False)
            # Reading a chat also reads the reactions on the account's own messages (plain SQL:
            # sandbox/selectors.py).
            own = sandbox_own_reactions(
                chat_ids=sorted(chats), sender_ids=sorted(users), up_to=max(wanted.values())
            )
            for pk, chat_id, sender_id, message_id, reactions in own:
                if message_id <= wanted.get((chat_id, sender_id), -1) and any(
                    r.get("unread") for r in reactions
                ):
                    SandboxMessage.objects.filter(pk=pk).update(
                        reactions=[{**r, "unread": False} for r in reactions]
                    )
        return answers


def _newest_ids(chat_ids: list[int]) -> dict[int, int]:
    """Each chat's newest message id (chats without messages are left out)."""
    return sandbox_newest_message_ids(chat_ids=chat_ids)  # plain SQL: sandbox/selectors.py
