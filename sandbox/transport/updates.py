"""The sandbox's update stream: the `SandboxUpdate` log read after a cursor, as Telegram's pts.

Its reads are the hot ones (a gateway asks `with_updates` at every pass for all its sandbox agents):
they are plain SQL in `sandbox.selectors`, with their measured reasons.
"""

from __future__ import annotations

import datetime as dt

from asgiref.sync import sync_to_async
from django.db.models import Q

from cindy_site.clock import now
from conversations.transport.base import (
    DialogUnreadMark,
    MessageEdited,
    MessagesDeleted,
    NewMessage,
    PartnerTyping,
    ReactionsChanged,
    Update,
)
from sandbox.models import SandboxChat, SandboxMember, SandboxUpdate, SandboxUser
from sandbox.selectors import (
    sandbox_members_among,
    sandbox_message_with_sender,
    sandbox_poll_update_ids,
    sandbox_update_window,
    sandbox_update_window_stamp,
    sandbox_updates_with_chats,
)
from sandbox.transport.records import reactions_info

POLL_BATCH = 500
#: The trailing window the update poll re-reads (see `_poll_updates`).
TRAILING_IDS = 1000
TRAILING_SECONDS = 10
MAX_SEEN = 5000
#: The poll's rows are read in steps of this many ids already seen (see `_poll_updates`).
SEEN_STEP = 500


class SandboxUpdates:
    """Mixed into `SandboxTransport`: `poll_updates` and the gateway's batch test `with_updates`."""

    #: What `with_updates` last read when it found every transport quiet (see there).
    _quiet_after: tuple | None = None

    cursor: int
    seen: dict[int, dt.datetime]
    connected: bool
    me: SandboxUser | None

    async def poll_updates(self) -> list[Update]:
        return await sync_to_async(self._poll_updates)()

    def _window(self) -> Q:
        """The trailing window the poll re-reads: the last TRAILING_IDS ids and TRAILING_SECONDS."""
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        return Q(id__gt=max(self.cursor - TRAILING_IDS, 0)) | Q(created__gte=recent)

    @classmethod
    def with_updates(cls, transports: list[SandboxUpdates]) -> set[SandboxUpdates]:
        """Which connected transports have something for `poll_updates`: one query for all of them.

        The same test as the poll (a row in the transport's window, in one of its chats, not its own
        typing, not seen yet), over the union of the windows, so a gateway's idle pass polls nobody. A
        subclass with a poll of its own, or a transport not connected, is always named: its poll
        decides.
        """
        plain = SandboxUpdates.poll_updates
        ready: set[SandboxUpdates] = set()
        live: list[SandboxUpdates] = []
        stamps: list[tuple[int, int, int]] = []  # each live transport's (identity, cursor, ids seen)
        for t in transports:  # one pass: a gateway asks this of every agent at every pass
            if t.connected and t.me is not None and type(t).poll_updates is plain:
                live.append(t)
                stamps.append((id(t), t.cursor, len(t.seen)))
            else:
                ready.add(t)
        if not live:
            return ready
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        floor = max(min(stamp[1] for stamp in stamps) - TRAILING_IDS, 0)
        # The window's row count and newest id, with the transports' cursors: when none of these moved
        # since a read that found every transport quiet, they are all quiet still (a row committed
        # late, with a lower id, changes the count; rows leaving the window only make fewer ready).
        key = (tuple(stamps), floor)
        stamp = sandbox_update_window_stamp(floor=floor, recent=recent)
        if cls._quiet_after == (key, stamp):
            return ready
        by_me: dict[int, list[SandboxUpdates]] = {}
        for transport in live:
            by_me.setdefault(transport.me.pk, []).append(transport)
        # The window's rows, then their chats' members among these accounts: two reads that each
        # follow an index (the window's through the id and `created` indexes), where one join
        # walked every update of every chat the accounts are in.
        window_rows = sandbox_update_window(floor=floor, recent=recent)
        chats = sorted({row[1] for row in window_rows})
        members_of: dict[int, list[int]] = {}
        for chat_id, user_id in sandbox_members_among(chat_ids=chats, user_ids=list(by_me)):
            members_of.setdefault(chat_id, []).append(user_id)
        rows = [
            (row_id, member_id, kind, actor_id, is_recent)
            for row_id, chat_id, kind, actor_id, is_recent in window_rows
            for member_id in members_of.get(chat_id, ())
        ]
        found = False
        for row_id, member_id, kind, actor_id, is_recent in rows:
            if kind == SandboxUpdate.Kind.TYPING and actor_id == member_id:
                continue  # one's own typing is no update for oneself
            if kind == SandboxUpdate.Kind.UNREAD_MARK and actor_id != member_id:
                continue  # an unread mark is the marking account's alone
            for transport in by_me[member_id]:
                if transport in ready or row_id in transport.seen:
                    continue
                if row_id > max(transport.cursor - TRAILING_IDS, 0) or is_recent:
                    ready.add(transport)
                    found = True
        cls._quiet_after = None if found else (key, stamp)
        return ready

    def _poll_updates(self) -> list[Update]:
        """Updates after the cursor, plus a re-read of a trailing window.

        On MariaDB an id becomes visible when its transaction commits, so a row with a lower id can
        appear after a higher one was read: reading strictly after the cursor would skip it forever.
        The window is read again and rows already handled are dropped by id (`self.seen` maps the ids
        still inside the window to their time, so it stays bounded).
        """
        me = self._require_me()
        # The read's limit grows in steps of SEEN_STEP ids already seen: it reads at least POLL_BATCH
        # rows not seen yet, when there are as many.
        steps = -(-len(self.seen) // SEEN_STEP)
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        # The window's ids first: most of them were seen by an earlier poll, and only the rest are
        # read as rows (with their chats).
        ids = sandbox_poll_update_ids(
            user_id=me.pk,
            floor=max(self.cursor - TRAILING_IDS, 0),
            recent=recent,
            limit=POLL_BATCH + steps * SEEN_STEP,
        )
        fresh = [i for i in ids if i not in self.seen][:POLL_BATCH]
        if not fresh:
            return []
        rows = sandbox_updates_with_chats(update_ids=fresh)  # plain SQL: sandbox/selectors.py
        if not rows:  # removed meanwhile (retention)
            return []
        self.cursor = max(self.cursor, rows[-1].id)
        self.seen.update((row.id, row.created) for row in rows)
        floor = max(self.cursor - TRAILING_IDS, 0)
        recent = now() - dt.timedelta(seconds=TRAILING_SECONDS)
        self.seen = {i: t for i, t in self.seen.items() if i > floor or t >= recent}
        if len(self.seen) > MAX_SEEN:  # a flood inside the time window: keep the newest ids
            self.seen = dict(sorted(self.seen.items())[-MAX_SEEN:])
        updates: list[Update] = []
        for row in rows:
            if row.kind == SandboxUpdate.Kind.TYPING:
                typing = self._partner_typing(row, me)
                if typing is not None:
                    updates.append(typing)
                continue
            if row.kind == SandboxUpdate.Kind.UNREAD_MARK:
                marked = SandboxMember.objects.filter(chat=row.chat, user=me, unread_mark=True).exists()
                updates.append(DialogUnreadMark(peer_id=self._peer_of(row.chat), unread=marked))
                continue
            message = (
                sandbox_message_with_sender(chat_id=row.chat_id, message_id=row.message_id)
                if row.message_id is not None
                else None
            )
            if message is None:
                continue
            if row.kind == SandboxUpdate.Kind.DELETE or message.deleted:
                updates.append(
                    MessagesDeleted(peer_id=self._peer_of(row.chat), message_ids=(row.message_id,))
                )
            elif row.kind == SandboxUpdate.Kind.NEW_MESSAGE:
                updates.append(NewMessage(self._to_inbound([message], row.chat)[0]))
            elif row.kind == SandboxUpdate.Kind.EDIT:
                updates.append(MessageEdited(self._to_inbound([message], row.chat)[0]))
            elif row.kind == SandboxUpdate.Kind.REACTION:
                reactions = reactions_info(message.reactions)
                unread = message.sender_id == me.pk and any(r.unread for r in reactions)
                updates.append(
                    ReactionsChanged(
                        peer_id=self._peer_of(row.chat),
                        message_id=row.message_id,
                        reactions=reactions,
                        unread=unread,
                    )
                )
        return updates

    def _partner_typing(self, row: SandboxUpdate, me: SandboxUser) -> PartnerTyping | None:
        """A person's typing in a DM with the agent, for as long as their member row says."""
        if row.chat.kind != SandboxChat.Kind.DM:
            return None
        until = (
            SandboxMember.objects.filter(chat=row.chat, user_id=row.actor_id)
            .values_list("typing_until", flat=True)
            .first()
        )
        seconds = max((until - now()).total_seconds(), 0.0) if until else 0.0
        return PartnerTyping(peer_id=self._peer_of(row.chat), seconds=seconds)
