"""The Telethon connection of one agent: requests, flood pauses, entity resolution and inbound updates.

Every request goes through `_call`, which
1. refuses at once with `FloodWait` while the account (or, for slow mode, the chat) is paused, so no
   request reaches Telegram before the time it asked for;
2. sends the raw TL request;
3. translates Telethon's exceptions into the protocol's errors, pausing the account on a flood wait
   and dropping the cached entity on PEER_ID_INVALID.

Inbound updates arrive through a Telethon `events.Raw` handler, are normalised at once and queued for
`poll_updates()`; the gateway drains the queue on its own schedule.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import Callable, Iterable
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from telethon import errors, events, utils
from telethon.tl import functions, types

from agents.models import Agent
from agents.telegram_server import point_at_configured_server
from agents.telethon_session import (
    DatabaseSession,
    SessionKeyError,
    SessionLeaseError,
    open_session_for,
    telegram_readiness_problems,
)
from cindy_site.clock import get_clock
from conversations.services.activity import Kind, record_event
from conversations.transport.base import (
    AccountInfo,
    AuthError,
    DialogUnreadMark,
    FloodWait,
    InboundMessage,
    MessageEdited,
    NewMessage,
    PermanentError,
    TransportError,
    Update,
)

from .caches import LRUCache, TTLCache
from .errors import is_slow_mode, translate
from .normalize import (
    EDIT_UPDATES,
    Context,
    inbound_message,
    message_of,
    sticker_sets_needed,
    topic_of,
    topic_titles_of,
    unsupported_message,
    updates_from,
)

logger = logging.getLogger(__name__)

ENTITY_TTL = 300.0
MUTE_TTL = 60.0
BLOCKLIST_TTL = 60.0
OWN_IDS_PER_PEER = 500
#: Users, chats and channels kept whole per agent, for names and chat kinds (docs/performance.md,
#: "Memory"): the least recently used beyond it are dropped. Updates and history pages carry their
#: own senders and chats, and access hashes stay in the session, so a dropped one costs nothing.
ENTITY_NAMES = 1000
#: Telethon's own in-memory entity cache per client (`entity_cache_limit`, 5,000 by default): past it,
#: Telethon writes the entities to the session (ours keeps them in the database) and keeps only those
#: its update handling needs (the channels it follows).
TELETHON_ENTITY_CACHE_LIMIT = 1000


class LeaseNotHeld(TransportError):
    """The gateway lost (or never had) the agent's lease; it must not connect."""


def default_client_factory(session: DatabaseSession, api_id: str, api_hash: str):
    from telethon import TelegramClient

    point_at_configured_server(session)
    return TelegramClient(
        session,
        int(api_id),
        api_hash,
        catch_up=True,  # fetch what happened while the gateway was down, from the stored state
        receive_updates=True,
        # One update at a time, so the queue keeps Telegram's order (our handler only normalises).
        sequential_updates=True,
        # Never let Telethon sleep through a flood wait on its own: the engine reschedules instead.
        flood_sleep_threshold=0,
        # Telethon files RANDOM_ID_DUPLICATE under "internal server errors": with its own retries it
        # would send the request six times, two seconds apart, then raise a bare ValueError (which
        # reads as an unknown peer). One attempt, and the RPC error itself, lets the transport find
        # the earlier message; the engine retries what is really transient.
        request_retries=0,
        raise_last_call_error=True,
        entity_cache_limit=TELETHON_ENTITY_CACHE_LIMIT,
    )


class TelethonConnection:
    """Connection, request and inbound plumbing shared by `TelethonTransport`'s operations."""

    def __init__(
        self,
        agent: Agent,
        *,
        gateway_id: str,
        client_factory: Callable[[DatabaseSession, str, str], Any] | None = None,
    ) -> None:
        self.agent = agent
        self.gateway_id = gateway_id
        self._client_factory = client_factory or default_client_factory
        self.client: Any = None
        self.session: DatabaseSession | None = None
        self.me: AccountInfo | None = None
        self._queue: list[Update] = []  # a list: one per agent, and an empty deque takes 760 bytes
        self._paused_until: float | None = None
        self._peer_paused_until: dict[int, float] = {}
        self._input_peers: TTLCache[int, Any] = TTLCache(ENTITY_TTL)
        self._muted: TTLCache[int, bool] = TTLCache(MUTE_TTL)
        self._blocklist: TTLCache[str, frozenset[int]] = TTLCache(BLOCKLIST_TTL)
        self._sticker_sets: TTLCache[str, Any] = TTLCache(None)  # for the session's lifetime
        self._sticker_set_names: dict[int, tuple[str, str]] = {}
        self._topic_titles: dict[tuple[int, int], str] = {}  # (peer, forum topic id) -> title
        self._entities: LRUCache[int, Any] = LRUCache(ENTITY_NAMES)
        self._own_ids: dict[int, collections.deque[int]] = {}
        #: Peers whose dialog is marked unread, or has unread mentions, as far as the account has seen
        #: (dialog lists, updates): `mark_read` clears those too (engine/attention.py).
        self._marked_unread: set[int] = set()
        self._unread_mentions: set[int] = set()
        self._closing = False
        #: Called (on the gateway's loop) whenever an update is queued, so the gateway polls at once.
        self.on_update: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} agent={self.agent.name!r} gateway={self.gateway_id!r}>"

    # --- connection -------------------------------------------------------------------------------

    async def connect(self) -> AccountInfo:
        # Connecting makes requests too; during a flood pause the supervisor tries again later.
        self._check_pause(None)
        if self.client is not None:
            await self.disconnect()  # a supervised reconnect reuses this object
        # The agent row may predate a telegram_login run in another process.
        await sync_to_async(self.agent.refresh_from_db)(
            fields=["phone", "telegram_user_id", "telegram_username"]
        )
        problems = await sync_to_async(telegram_readiness_problems)(self.agent)
        if problems:
            raise AuthError("NOT_READY", "; ".join(problems))
        try:
            self.session = await sync_to_async(open_session_for)(self.agent, self.gateway_id)
        except SessionLeaseError as exc:
            raise LeaseNotHeld(str(exc)) from None
        except SessionKeyError as exc:
            raise AuthError("SESSION_KEY", str(exc)) from None
        self._closing = False
        self.client = self._client_factory(self.session, settings.TELEGRAM_API_ID, settings.TELEGRAM_API_HASH)
        self.client.add_event_handler(self._on_update, events.Raw)
        await self._guard(self.client.connect())
        # Not `is_user_authorized()`: it reports any RPC error (a flood wait, Telegram's 500s) as
        # "logged out", which would stop the agent. `get_me()` answers None only for 401 errors and
        # lets the others through, translated like every request (flood wait, transient).
        me = await self._guard(self.client.get_me())
        if me is None:
            raise AuthError(
                "AUTH_KEY_UNREGISTERED",
                f"agents/{self.agent.name}: Telegram no longer accepts the stored session: run "
                f"python manage.py telegram_login {self.agent.name}",
            )
        self._entities[me.id] = me
        self.me = AccountInfo(
            user_id=me.id,
            name=utils.get_display_name(me),
            username=me.username or "",
            premium=bool(getattr(me, "premium", False)),
        )
        return self.me

    async def disconnect(self) -> None:
        self._closing = True
        client, self.client = self.client, None
        if client is not None:
            try:
                await client.disconnect()  # Telethon saves the update state and closes the session
            except Exception:
                logger.warning("agents/%s: error while disconnecting from Telegram", self.agent.name)
        if self.session is not None:
            await self.session.flush_async()

    def _require_client(self):
        if self.client is None:
            raise TransportError(f"agents/{self.agent.name}: not connected to Telegram")
        return self.client

    # --- requests ---------------------------------------------------------------------------------

    def _check_pause(self, peer_id: int | None) -> None:
        now = get_clock().monotonic()
        until = self._paused_until
        if peer_id is not None:
            until = max(until or 0, self._peer_paused_until.get(peer_id, 0)) or None
        if until is not None and now < until:
            raise FloodWait(math.ceil(until - now), "account paused by an earlier flood wait")

    @property
    def paused_for(self) -> float:
        """Seconds left in the account-wide flood pause (0 when not paused)."""
        if self._paused_until is None:
            return 0.0
        return max(0.0, self._paused_until - get_clock().monotonic())

    async def _pause(self, exc: BaseException, err: FloodWait, peer_id: int | None) -> None:
        until = get_clock().monotonic() + err.seconds
        slow_mode = is_slow_mode(exc) and peer_id is not None
        if slow_mode:
            # Slow mode limits one chat; the rest of the account may go on.
            self._peer_paused_until[peer_id] = until
            scope = f"chat {peer_id} (slow mode)"
        else:
            self._paused_until = max(self._paused_until or 0, until)
            scope = "the account"
        summary = f"Telegram asked to wait {err.seconds}s: {scope} paused, no requests until then"
        logger.warning("agents/%s: %s", self.agent.name, summary)
        await sync_to_async(record_event)(
            Kind.INFO,
            agent_id=self.agent.pk,
            summary=summary,
            data={"flood_wait": err.seconds, "peer_id": peer_id if slow_mode else None},
        )

    async def _guard(self, awaitable, *, peer_id: int | None = None):
        """Await a Telethon call, translating its errors (the pause check is the caller's)."""
        try:
            return await awaitable
        except TransportError:
            raise
        except ValueError as exc:
            # Telethon raises ValueError for peers it cannot resolve from its cache or Telegram.
            if peer_id is not None:
                self._input_peers.invalidate(peer_id)
                raise PermanentError(
                    "PEER_ID_INVALID",
                    f"agents/{self.agent.name}: Telegram peer {peer_id} is unknown to this account: {exc}",
                ) from exc
            raise TransportError(str(exc)) from exc
        except Exception as exc:
            err = translate(exc)
            if isinstance(err, FloodWait):
                await self._pause(exc, err, peer_id)
            if isinstance(exc, errors.PeerIdInvalidError) and peer_id is not None:
                self._input_peers.invalidate(peer_id)
            raise err from exc

    async def _call(self, request, *, peer_id: int | None = None):
        self._check_pause(peer_id)
        client = self._require_client()
        return await self._guard(client(request), peer_id=peer_id)

    async def _input_peer(self, peer_id: int):
        cached = self._input_peers.get(peer_id)
        if cached is not None:
            return cached
        self._check_pause(peer_id)
        client = self._require_client()
        peer = await self._guard(client.get_input_entity(peer_id), peer_id=peer_id)
        return self._input_peers.set(peer_id, peer)

    async def _peer_call(self, peer_id: int, build: Callable[[Any], Any]):
        """Send `build(input_peer)`; on PEER_ID_INVALID from a cached peer, resolve afresh once."""
        was_cached = self._input_peers.get(peer_id) is not None
        peer = await self._input_peer(peer_id)
        try:
            return await self._call(build(peer), peer_id=peer_id)
        except PermanentError as exc:
            if exc.reason != "PEER_ID_INVALID" or not was_cached:
                raise
        peer = await self._input_peer(peer_id)
        return await self._call(build(peer), peer_id=peer_id)

    # --- inbound ----------------------------------------------------------------------------------

    def _context(self) -> Context:
        me = self.me
        return Context(
            me_id=me.user_id if me else 0,
            me_username=me.username if me else "",
            entities=self._entities,
            sticker_sets=self._sticker_set_names,
            own_message_ids={peer: set(ids) for peer, ids in self._own_ids.items()},
            topic_titles=self._topic_titles,
        )

    def _remember_entities(self, entities: Iterable[Any]) -> None:
        for entity in entities:
            if isinstance(entity, (types.User, types.Chat, types.Channel)):
                self._entities[utils.get_peer_id(entity)] = entity

    def _remember_own(self, peer_id: int, message_id: int) -> None:
        ids = self._own_ids.setdefault(peer_id, collections.deque(maxlen=OWN_IDS_PER_PEER))
        ids.append(message_id)

    async def _resolve_sticker_sets(self, set_ids: set[int], messages: Iterable[Any]) -> None:
        """Look up names and titles of sticker sets known only by id (once per session)."""
        wanted = {sid for sid in set_ids if sid not in self._sticker_set_names}
        if not wanted:
            return
        by_id = {}
        for message in messages:
            for attr in getattr(getattr(getattr(message, "media", None), "document", None), "attributes", []):
                stickerset = getattr(attr, "stickerset", None)
                if isinstance(stickerset, types.InputStickerSetID):
                    by_id[stickerset.id] = stickerset
        for set_id in wanted:
            try:
                result = await self._call(functions.messages.GetStickerSetRequest(by_id[set_id], hash=0))
            except (TransportError, KeyError):
                # The message is still delivered; only the set's name is missing.
                logger.info("agents/%s: sticker set %s not resolved", self.agent.name, set_id)
                continue
            self._sticker_set_names[set_id] = (result.set.short_name, result.set.title)

    async def _resolve_topics(self, messages: Iterable[Any]) -> None:
        """Learn the titles of the forum topics these messages are in: from the messages that opened
        (or renamed) a topic, else with one messages.getForumTopicsByID per chat for the topics not
        known yet (once per session)."""
        wanted: dict[int, set[int]] = {}
        for message in messages:
            peer = getattr(message, "peer_id", None)
            if peer is None:
                continue
            peer_id = utils.get_peer_id(peer)
            opened = topic_titles_of(message)
            if opened is not None:
                self._topic_titles[(peer_id, opened[0])] = opened[1]
            topic_id = topic_of(message)
            if topic_id is not None and (peer_id, topic_id) not in self._topic_titles:
                wanted.setdefault(peer_id, set()).add(topic_id)
        for peer_id, topic_ids in wanted.items():
            ids = sorted(topic_ids)
            try:
                result = await self._peer_call(
                    peer_id,
                    lambda peer, ids=ids: functions.messages.GetForumTopicsByIDRequest(peer=peer, topics=ids),
                )
            except TransportError:
                # The messages are still delivered; only the topics' titles are missing.
                logger.info(
                    "agents/%s: forum topics %s of %s not resolved", self.agent.name, topic_ids, peer_id
                )
                continue
            for topic in getattr(result, "topics", []):
                if isinstance(topic, types.ForumTopic):
                    self._topic_titles[(peer_id, topic.id)] = topic.title

    async def _normalise_messages(self, messages: list[Any]) -> list[InboundMessage]:
        needed: set[int] = set()
        for message in messages:
            needed |= sticker_sets_needed(message)
        await self._resolve_sticker_sets(needed, messages)
        await self._resolve_topics(messages)
        ctx = self._context()
        out = []
        for message in messages:
            if isinstance(message, types.MessageEmpty):
                continue
            try:
                inbound = inbound_message(message, ctx)
            except Exception:
                # One unreadable message must not fail the whole page: the reconciler would then
                # stop at it on every reconnect. It is kept as an "unsupported content" record.
                self._log_unreadable("history", message)
                inbound = unsupported_message(message, ctx)
            if inbound.is_outgoing:
                self._remember_own(inbound.peer_id, inbound.message_id)
            out.append(inbound)
        return out

    def _log_unreadable(self, source: str, message: Any, update: Any = None) -> None:
        peer = getattr(message, "peer_id", None) or getattr(update, "peer", None)
        try:
            peer_text = str(utils.get_peer_id(peer)) if peer is not None else "unknown"
        except Exception:
            peer_text = repr(peer)
        message_id = getattr(message, "id", None) or getattr(update, "msg_id", None)
        logger.exception(
            "agents/%s: could not read a Telegram %s (%s%s) in peer %s, message %s; %s",
            self.agent.name,
            source,
            type(update).__name__ + " with " if update is not None else "",
            type(message).__name__ if message is not None else "no message",
            peer_text,
            message_id if message_id is not None else "unknown",
            "kept as unsupported content" if message is not None else "the update is dropped",
        )

    def _queue_unreadable(self, update: Any) -> None:
        """An update normalisation failed on: log it with its context and keep what can be kept."""
        try:
            message = message_of(update, self.me.user_id if self.me else 0)
        except Exception:
            message = None
        self._log_unreadable("update", message, update)
        if message is None:
            return  # reactions or deletions: the next reconcile reads the chat again
        record = unsupported_message(message, self._context())
        edited = isinstance(update, EDIT_UPDATES)
        self._queue.append(MessageEdited(record) if edited else NewMessage(record))

    async def _on_update(self, update) -> None:
        """Telethon's raw update handler: normalise and queue; never raise into Telethon."""
        try:
            self._remember_entities((getattr(update, "_entities", None) or {}).values())
            message = message_of(update, self.me.user_id if self.me else 0)
            if message is not None:
                await self._resolve_sticker_sets(sticker_sets_needed(message), [message])
                await self._resolve_topics([message])
                if getattr(message, "out", False):
                    self._remember_own(utils.get_peer_id(message.peer_id), message.id)
            found = updates_from(update, self._context())
            self._note_attention(found)
            self._queue.extend(found)
        except Exception:
            try:
                self._queue_unreadable(update)
            except Exception:
                logger.exception(
                    "agents/%s: could not read a Telegram %s update", self.agent.name, type(update).__name__
                )
        if self._queue and self.on_update is not None:
            self.on_update()

    def _note_attention(self, updates: list[Update]) -> None:
        """Remember the dialogs `mark_read` must also clear: marked unread, or with a mention."""
        for update in updates:
            if isinstance(update, DialogUnreadMark):
                (self._marked_unread.add if update.unread else self._marked_unread.discard)(update.peer_id)
            elif isinstance(update, NewMessage) and (
                update.message.mentions_agent or update.message.reply_to_agent
            ):
                self._unread_mentions.add(update.message.peer_id)

    @property
    def poll_pending(self) -> bool:
        """Whether `poll_updates` has something to report: queued updates, or a connection gone
        (which it raises). The gateway's ingest step polls only such transports, so a pass over a
        thousand idle clients costs a property read each, not a coroutine each."""
        client = self.client
        return bool(self._queue) or self._closing or client is None or not client.is_connected()

    async def poll_updates(self) -> list[Update]:
        """The queued updates; raises when the connection is gone, so the gateway reconnects.

        Telethon reconnects on its own after a network blip (and fetches what it missed), keeping
        `is_connected()` true meanwhile. It turns false only when Telethon gives up: its reconnect
        attempts failed, or its update loop stopped (then `_updates_error` says why, e.g. the session
        was revoked, which is reported as an `AuthError` so the agent is stopped with the reason).
        """
        drained = list(self._queue)
        self._queue.clear()
        if drained or self._closing:
            return drained
        client = self.client
        if client is None:
            raise TransportError(f"agents/{self.agent.name}: not connected to Telegram")
        if not client.is_connected():
            error = getattr(client, "_updates_error", None)
            if isinstance(error, BaseException):
                raise translate(error) from error
            raise TransportError(f"agents/{self.agent.name}: the Telegram connection was lost")
        return drained
