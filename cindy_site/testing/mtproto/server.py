"""The stand-in's MTProto endpoint: connections, key exchange, sessions, and RPC framing.

One asyncio server on 127.0.0.1, run in its own thread (`StandIn.start`) or in the foreground
(`StandIn.serve_forever`). Per connection it speaks the full TCP transport; unencrypted packets run the
key exchange, encrypted ones are MTProto 2.0 messages: bad salts and out-of-range msg ids are answered
as Telegram does (bad_server_salt, bad_msg_notification), a new session gets new_session_created,
containers and gzip_packed are unpacked, content messages are acknowledged, requests are unwrapped from
invokeWithLayer / initConnection / invokeWithoutUpdates / invokeAfterMsg and answered with rpc_result
(gzip_packed when large) or rpc_error. Live updates are pushed to every connection of the account that
has made a request with updates on. An auth key used from two connections at once is revoked:
AUTH_KEY_DUPLICATED (406) on both, as Telegram does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from telethon.crypto import AuthKey
from telethon.errors import TypeNotFoundError
from telethon.extensions import BinaryReader
from telethon.tl import functions, types
from telethon.tl.core import GzipPacked, MessageContainer

from .api import Api
from .context import KeyState
from .crypto import Handshake, HandshakeError, ServerKey, decrypt_message, encrypt_message
from .framing import FramingError, FullTransport
from .media import populate
from .rpc import RpcFail, method_name
from .world import World

logger = logging.getLogger(__name__)

WRAPPERS = (
    functions.InvokeWithLayerRequest,
    functions.InitConnectionRequest,
    functions.InvokeWithoutUpdatesRequest,
    functions.InvokeAfterMsgRequest,
    functions.InvokeAfterMsgsRequest,
)
GZIP_ABOVE = 512


@dataclass
class Call:
    method: str
    time: float
    user_id: int | None
    connection: int
    error: str = ""
    request: Any = None


def tl_bytes(value: Any) -> bytes:
    """TL serialisation of an RPC result: objects, booleans, and vectors of either."""
    if value is True:
        return struct.pack("<I", 0x997275B5)
    if value is False:
        return struct.pack("<I", 0xBC799737)
    if isinstance(value, list):
        return struct.pack("<Ii", 0x1CB5C415, len(value)) + b"".join(tl_bytes(v) for v in value)
    return bytes(value)


class Connection:
    _ids = itertools.count(1)

    def __init__(self, server: StandIn, transport: FullTransport) -> None:
        self.id = next(self._ids)
        self.server = server
        self.transport = transport
        self.handshake = Handshake(server.key)
        self.key: KeyState | None = None
        self.session_id: int | None = None
        self.wants_updates = False
        self._last_msg_id = 0
        self._seq = 0

    @property
    def user_id(self) -> int | None:
        return self.key.user_id if self.key else None

    def msg_id(self, response: bool) -> int:
        now = time.time()
        value = (int(now) << 32) | (int((now % 1) * 2**32) & ~3)
        value = max(value, self._last_msg_id + 4) & ~3
        self._last_msg_id = value
        return value | (1 if response else 3)

    def send(self, obj_bytes: bytes, *, content: bool = True, response: bool = True) -> None:
        seqno = self._seq * 2 + 1 if content else self._seq * 2
        self._seq += int(content)
        assert self.key is not None and self.session_id is not None
        self.transport.write(
            encrypt_message(
                self.key.auth_key,
                salt=self.key.salt,
                session_id=self.session_id,
                msg_id=self.msg_id(response),
                seqno=seqno,
                body=obj_bytes,
            )
        )

    def send_plain(self, obj_bytes: bytes) -> None:
        self.transport.write(struct.pack("<qqi", 0, self.msg_id(True), len(obj_bytes)) + obj_bytes)


class StandIn:
    """The loopback Telegram. `world` is its state; `calls` every request with its time."""

    def __init__(
        self, *, host: str = "127.0.0.1", port: int = 0, key: ServerKey | None = None, dc_id: int = 2
    ):
        self.host, self.port, self.dc_id = host, port, dc_id
        self.key = key or ServerKey.generate()
        self.world = World(push=self._push, dc_id=dc_id)
        self.api = Api(self)
        populate(self.world)
        self.keys: dict[int, KeyState] = {}
        self.calls: list[Call] = []
        self.flood: dict[str, list[int]] = {}  # method -> FLOOD_WAIT seconds still to answer
        # A repeated random_id returns the first message; True answers RANDOM_ID_DUPLICATE instead
        # (Telegram does either, depending on the method and how long ago the first send was).
        self.random_id_duplicate_error = False
        self.hold: dict[str, float] = {}  # method -> seconds to hold the answer after doing the work
        self.connections: set[Connection] = set()
        self.missed: set[int] = set()  # accounts that had updates while none of their connections listened
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # --- running ----------------------------------------------------------------------------------

    async def listen(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    def start(self) -> StandIn:
        """Run in a background thread; returns once the port is open."""
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            loop.run_until_complete(self.listen())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=run, name="telegram-standin", daemon=True)
        self._thread.start()
        ready.wait(30)
        return self

    def stop(self) -> None:
        if self.loop is not None and self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.transport.writer.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    def run(self, fn, *args, **kwargs) -> Any:
        """Call `fn` on the server's loop (world changes must happen there) and return its result."""
        future: concurrent.futures.Future = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:
                future.set_exception(exc)

        assert self.loop is not None
        self.loop.call_soon_threadsafe(call)
        return future.result(30)

    def inject_flood_wait(self, method: str, seconds: int, *, times: int = 1) -> None:
        """The next `times` calls of `method` (e.g. "messages.sendMessage") answer FLOOD_WAIT_<seconds>."""
        self.flood.setdefault(method, []).extend([seconds] * times)

    def hold_answer(self, method: str, seconds: float) -> None:
        """The next call of `method` takes effect at once but is answered only after `seconds`."""
        self.hold[method] = seconds

    def authorize(self, user_id: int) -> AuthKey:
        """A new auth key already signed in as `user_id`, as if the account had logged in with it (run
        it on the loop). Benches store it in a session instead of a key exchange and a login per account."""
        auth_key = AuthKey(os.urandom(256))
        self.keys[auth_key.key_id] = KeyState(auth_key, salt=self._new_salt(), user_id=user_id)
        return auth_key

    def drop_connections(self) -> int:
        """Close every client connection, as a network failure would (run it on the loop)."""
        dropped = list(self.connections)
        for conn in dropped:
            self.connections.discard(conn)
            if conn.key is not None:
                conn.key.connections.discard(conn)
            conn.transport.writer.close()
        return len(dropped)

    def calls_of(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    # --- connections ------------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = Connection(self, FullTransport(reader, writer))
        self.connections.add(conn)
        try:
            while True:
                payload = await conn.transport.read()
                await self._packet(conn, payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except (FramingError, HandshakeError, TypeNotFoundError) as exc:
            logger.warning("telegram stand-in: connection %s closed: %s", conn.id, exc)
        except Exception:
            logger.exception("telegram stand-in: connection %s closed by an error", conn.id)
        finally:
            self.connections.discard(conn)
            if conn.key is not None:
                conn.key.connections.discard(conn)
            writer.close()

    async def _packet(self, conn: Connection, payload: bytes) -> None:
        (key_id,) = struct.unpack("<Q", payload[:8])
        if key_id == 0:
            _msg_id, length = struct.unpack("<qi", payload[8:20])
            with BinaryReader(payload[20 : 20 + length]) as reader:
                request = reader.tgread_object()
            answer = conn.handshake.answer(request)
            if conn.handshake.done is not None:
                auth_key = conn.handshake.done
                self.keys[auth_key.key_id] = KeyState(auth_key, salt=self._new_salt())
                conn.handshake = Handshake(self.key)
            conn.send_plain(bytes(answer))
            return
        state = self.keys.get(key_id)
        if state is None:
            conn.transport.write_error(-404)  # Telethon then makes a new key
            return
        env = decrypt_message(state.auth_key, payload)
        conn.key = state
        if env.session_id != conn.session_id:
            conn.session_id = env.session_id
            conn.send(
                bytes(
                    types.NewSessionCreated(
                        first_msg_id=env.msg_id, unique_id=self._new_salt(), server_salt=state.salt
                    )
                ),
                response=False,
            )
        self._note_connection(conn, state)
        problem = self._msg_id_problem(env.msg_id)
        if problem:
            conn.send(bytes(types.BadMsgNotification(env.msg_id, env.seqno, problem)), content=False)
            return
        if env.salt != state.salt:
            conn.send(bytes(types.BadServerSalt(env.msg_id, env.seqno, 48, state.salt)), content=False)
            return
        with BinaryReader(env.body) as reader:
            obj = reader.tgread_object()
        acks: list[int] = []
        await self._message(conn, env.msg_id, env.seqno, obj, acks)
        if acks:
            conn.send(bytes(types.MsgsAck(acks)), content=False)

    def _note_connection(self, conn: Connection, state: KeyState) -> None:
        state.connections.add(conn)
        others = [c for c in state.connections if c is not conn and c.session_id != conn.session_id]
        if others and not state.revoked:
            state.revoked = "AUTH_KEY_DUPLICATED"
            logger.warning(
                "telegram stand-in: auth key %s used from two connections: revoked", state.auth_key.key_id
            )

    @staticmethod
    def _msg_id_problem(msg_id: int) -> int:
        sent = msg_id >> 32
        if msg_id % 4:
            return 18  # a client msg_id must be divisible by 4
        if sent < time.time() - 300:
            return 16  # too low
        if sent > time.time() + 30:
            return 17  # too high
        return 0

    @staticmethod
    def _new_salt() -> int:
        return struct.unpack("<q", os.urandom(8))[0]

    async def _message(self, conn: Connection, msg_id: int, seqno: int, obj: Any, acks: list[int]) -> None:
        if isinstance(obj, MessageContainer):
            for inner in obj.messages:
                await self._message(conn, inner.msg_id, inner.seq_no, inner.obj, acks)
            return
        if isinstance(obj, GzipPacked):
            with BinaryReader(obj.data) as reader:
                obj = reader.tgread_object()
        if seqno % 2:
            acks.append(msg_id)
        if isinstance(obj, types.MsgsAck):
            return
        if isinstance(obj, (functions.PingRequest, functions.PingDelayDisconnectRequest)):
            conn.send(bytes(types.Pong(msg_id=msg_id, ping_id=obj.ping_id)), content=False)
            return
        if isinstance(obj, functions.DestroySessionRequest):
            conn.send(self._result(msg_id, types.DestroySessionOk(obj.session_id)))
            return
        await self._rpc(conn, msg_id, obj)

    def _result(self, msg_id: int, result: Any) -> bytes:
        body = tl_bytes(result)
        if len(body) > GZIP_ABOVE:
            body = bytes(GzipPacked(body))
        return struct.pack("<Iq", 0xF35C6D01, msg_id) + body

    async def _rpc(self, conn: Connection, msg_id: int, request: Any) -> None:
        updates = True
        while isinstance(request, WRAPPERS):
            if isinstance(request, functions.InvokeWithoutUpdatesRequest):
                updates = False
            request = request.query
        name = method_name(request)
        call = Call(name, time.time(), conn.user_id, conn.id, request=request)
        self.calls.append(call)
        try:
            if conn.key is not None and conn.key.revoked:
                raise RpcFail(406, conn.key.revoked)
            pending = self.flood.get(name)
            if pending:
                raise RpcFail(420, f"FLOOD_WAIT_{pending.pop(0)}")
            try:
                result = await self.api.call(conn, request)
            except RpcFail:
                raise
            except Exception as exc:
                logger.exception("telegram stand-in: %s failed", name)
                raise RpcFail(500, f"INTERNAL_STANDIN_{type(exc).__name__.upper()}") from exc
            listening = conn.user_id is not None and updates and not conn.wants_updates
            conn.wants_updates = conn.wants_updates or listening
        except RpcFail as exc:
            call.error = exc.message
            body = struct.pack("<Iq", 0xF35C6D01, msg_id) + bytes(types.RpcError(exc.code, exc.message))
            conn.send(body)
            return
        if name in self.hold:  # done, but the client hears of it only later (a crash test's window)
            asyncio.ensure_future(self._answer_later(conn, self._result(msg_id, result), self.hold.pop(name)))
            return
        conn.send(self._result(msg_id, result))
        if listening and conn.user_id in self.missed:
            # Updates came while no connection of the account listened: as Telegram does, tell the
            # session it fell behind, so that the client asks for the difference.
            self.missed.discard(conn.user_id)
            conn.send(bytes(types.UpdatesTooLong()), response=False)

    async def _answer_later(self, conn: Connection, body: bytes, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if conn in self.connections:
            conn.send(body)

    def _push(self, user_id: int, updates: Any) -> None:
        body = bytes(updates)
        if len(body) > GZIP_ABOVE:
            body = bytes(GzipPacked(body))
        listeners = [
            conn
            for conn in self.connections
            if conn.user_id == user_id
            and conn.wants_updates
            and conn.key is not None
            and not conn.key.revoked
        ]
        for conn in listeners:
            conn.send(body, response=False)
        if not listeners:
            self.missed.add(user_id)
