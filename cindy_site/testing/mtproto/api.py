"""The Telegram API methods the stand-in answers: login, updates, chats, messages, files, settings.

Each handler takes the connection and the request and returns the TL result, or raises `RpcFail`.
A method without a handler answers 400 INPUT_METHOD_INVALID (Telegram's own answer for an unknown
method) and is still recorded in the call log, so a test sees what was asked.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from telethon import password as srp
from telethon.tl import functions, types

from .chats_api import ChatsApi
from .context import Caller, Endpoint
from .crypto import DH_G, DH_PRIME
from .forum_api import ForumApi
from .presence_api import PresenceApi
from .rpc import HANDLERS, RpcFail, handles


def test_code(phone: str) -> str | None:
    """The login code of a test number +99966XYYYY (X five times), or None for another number."""
    digits = phone.lstrip("+")
    if len(digits) == 10 and digits.startswith("99966") and digits.isdigit():
        return digits[5] * 5
    return None


class Api(ForumApi, ChatsApi, PresenceApi):
    def __init__(self, server: Endpoint) -> None:
        self.server = server
        self.world = server.world
        self._codes: dict[str, str] = {}  # phone_code_hash -> phone
        self._srp: dict[int, tuple[int, int, int]] = {}  # srp_id -> (user id, b, B)

    async def call(self, conn: Caller, request: Any) -> Any:
        handler = HANDLERS.get(type(request))
        if handler is None:
            raise RpcFail(400, "INPUT_METHOD_INVALID")
        return getattr(self, handler)(conn, request)

    # --- connection and login ---------------------------------------------------------------------

    @handles(functions.help.GetConfigRequest)
    def get_config(self, conn, request):
        now = int(time.time())
        limits = dict.fromkeys(
            [
                "chat_size_max",
                "megagroup_size_max",
                "forwarded_count_max",
                "online_update_period_ms",
                "offline_blur_timeout_ms",
                "offline_idle_timeout_ms",
                "online_cloud_timeout_ms",
                "notify_cloud_delay_ms",
                "notify_default_delay_ms",
                "push_chat_period_ms",
                "push_chat_limit",
                "edit_time_limit",
                "revoke_time_limit",
                "revoke_pm_time_limit",
                "rating_e_decay",
                "stickers_recent_limit",
                "channels_read_media_period",
                "call_receive_timeout_ms",
                "call_ring_timeout_ms",
                "call_connect_timeout_ms",
                "call_packet_timeout_ms",
                "caption_length_max",
                "message_length_max",
            ],
            4096,
        )
        return types.Config(
            date=now,
            expires=now + 3600,
            test_mode=True,
            this_dc=self.world.dc_id,
            dc_options=[
                types.DcOption(id=self.world.dc_id, ip_address=self.server.host, port=self.server.port)
            ],
            dc_txt_domain_name="localhost",
            me_url_prefix="https://t.me/",
            webfile_dc_id=self.world.dc_id,
            **limits,
        )

    @handles(functions.auth.SendCodeRequest)
    def send_code(self, conn, request):
        if test_code(request.phone_number) is None:
            raise RpcFail(400, "PHONE_NUMBER_INVALID")
        code_hash = secrets.token_hex(8)
        self._codes[code_hash] = request.phone_number.lstrip("+")
        return types.auth.SentCode(type=types.auth.SentCodeTypeApp(length=5), phone_code_hash=code_hash)

    @handles(functions.auth.SignInRequest)
    def sign_in(self, conn, request):
        phone = request.phone_number.lstrip("+")
        if self._codes.get(request.phone_code_hash) != phone:
            raise RpcFail(400, "PHONE_CODE_EXPIRED")
        if request.phone_code != test_code(phone):
            raise RpcFail(400, "PHONE_CODE_INVALID")
        user = self.world.user_by_phone(phone) or self.world.create_user(
            phone=phone, first_name=f"User {phone[-4:]}"
        )
        if user.password:
            conn.key.user_id = None
            conn.key.pending_user = user.id
            raise RpcFail(401, "SESSION_PASSWORD_NEEDED")
        return self._authorize(conn, user.id)

    def _authorize(self, conn, user_id: int):
        conn.key.user_id = user_id
        return types.auth.Authorization(user=self.world.tl_user(user_id, user_id))

    def _pending_user(self, conn):
        user_id = getattr(conn.key, "pending_user", None)
        if user_id is None:
            raise RpcFail(400, "PASSWORD_REQUIRED_FIRST_SIGN_IN")  # no sign-in waits for a password
        return self.world.user(user_id)

    def _algo(self, user) -> types.PasswordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow:
        salt = user.phone.encode()
        return types.PasswordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow(
            salt1=b"standin-1-" + salt, salt2=b"standin-2-" + salt, g=DH_G, p=DH_PRIME.to_bytes(256, "big")
        )

    @handles(functions.account.GetPasswordRequest)
    def get_password(self, conn, request):
        user = self.world.users.get(conn.user_id) if conn.user_id else self._pending_user(conn)
        if not user.password:
            return types.account.Password(
                new_algo=types.PasswordKdfAlgoUnknown(),
                new_secure_algo=types.SecurePasswordKdfAlgoUnknown(),
                secure_random=secrets.token_bytes(32),
            )
        algo = self._algo(user)
        x = int.from_bytes(srp.compute_hash(algo, user.password), "big")
        v = pow(DH_G, x, DH_PRIME)
        k = int.from_bytes(srp.sha256(algo.p, srp.big_num_for_hash(DH_G)), "big")
        b = secrets.randbits(2048)
        big_b = (k * v + pow(DH_G, b, DH_PRIME)) % DH_PRIME
        srp_id = secrets.randbits(63)
        self._srp[srp_id] = (user.id, b, big_b)
        return types.account.Password(
            has_password=True,
            current_algo=algo,
            srp_B=big_b.to_bytes(256, "big"),
            srp_id=srp_id,
            new_algo=algo,
            new_secure_algo=types.SecurePasswordKdfAlgoUnknown(),
            secure_random=secrets.token_bytes(32),
        )

    @handles(functions.auth.CheckPasswordRequest)
    def check_password(self, conn, request):
        check = request.password
        user = self._pending_user(conn)
        if not isinstance(check, types.InputCheckPasswordSRP) or check.srp_id not in self._srp:
            raise RpcFail(400, "SRP_ID_INVALID")
        user_id, b, big_b = self._srp.pop(check.srp_id)
        algo = self._algo(user)
        v = pow(DH_G, int.from_bytes(srp.compute_hash(algo, user.password), "big"), DH_PRIME)
        a_bytes, b_bytes = check.A, big_b.to_bytes(256, "big")
        u = int.from_bytes(srp.sha256(a_bytes, b_bytes), "big")
        s = pow(int.from_bytes(a_bytes, "big") * pow(v, u, DH_PRIME), b, DH_PRIME)
        p_hash, g_hash = srp.sha256(algo.p), srp.sha256(srp.big_num_for_hash(DH_G))
        expected = srp.sha256(
            srp.xor(p_hash, g_hash),
            srp.sha256(algo.salt1),
            srp.sha256(algo.salt2),
            a_bytes,
            b_bytes,
            srp.sha256(srp.big_num_for_hash(s)),
        )
        if user_id != user.id or expected != check.M1:
            raise RpcFail(400, "PASSWORD_HASH_INVALID")
        conn.key.pending_user = None
        return self._authorize(conn, user.id)

    # --- accounts ---------------------------------------------------------------------------------

    def _input_user(self, me: int, input_user) -> int:
        if isinstance(input_user, (types.InputUserSelf, types.InputPeerSelf)):
            return me
        user_id = getattr(input_user, "user_id", None)
        if user_id not in self.world.users:
            raise RpcFail(400, "USER_ID_INVALID")
        return user_id

    @handles(functions.users.GetUsersRequest)
    def get_users(self, conn, request):
        me = self._me(conn)
        return [self.world.tl_user(self._input_user(me, u), me) for u in request.id]

    @handles(functions.users.GetFullUserRequest)
    def get_full_user(self, conn, request):
        me = self._me(conn)
        uid = self._input_user(me, request.id)
        key = self.world.dm_key(me, uid)
        full = types.UserFull(
            id=uid,
            settings=types.PeerSettings(),
            notify_settings=self._notify(me, key),
            common_chats_count=0,
            blocked=uid in self.world.users[me].blocked,
            about=f"{self.world.users[uid].first_name} (stand-in)",
        )
        return types.users.UserFull(full_user=full, chats=[], users=[self.world.tl_user(uid, me)])

    @handles(functions.account.GetNotifySettingsRequest)
    def get_notify_settings(self, conn, request):
        me = self._me(conn)
        return self._notify(me, self.world.key_for(me, request.peer.peer))

    @handles(functions.account.UpdateNotifySettingsRequest)
    def update_notify_settings(self, conn, request):
        me = self._me(conn)
        key = self.world.key_for(me, request.peer.peer)
        until = request.settings.mute_until  # TL dates arrive as datetimes
        self.world.users[me].muted_until[key] = int(until.timestamp()) if until else 0
        return True

    @handles(functions.contacts.BlockRequest, functions.contacts.UnblockRequest)
    def block(self, conn, request):
        me = self._me(conn)
        uid = self._input_user(me, types.InputUser(getattr(request.id, "user_id", 0), 0))
        blocked = self.world.users[me].blocked
        if isinstance(request, functions.contacts.BlockRequest):
            blocked.add(uid)
        else:
            blocked.discard(uid)
        return True

    @handles(functions.contacts.GetBlockedRequest)
    def get_blocked(self, conn, request):
        me = self._me(conn)
        ids = sorted(self.world.users[me].blocked)
        page = ids[request.offset : request.offset + request.limit]
        return types.contacts.BlockedSlice(
            count=len(ids),
            blocked=[types.PeerBlocked(peer_id=types.PeerUser(u), date=int(time.time())) for u in page],
            chats=[],
            users=[self.world.tl_user(u, me) for u in page],
        )
