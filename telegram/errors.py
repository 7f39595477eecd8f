"""Telethon's exceptions mapped onto the transport protocol's errors.

- Flood waits (FLOOD_WAIT_X, FLOOD_PREMIUM_WAIT_X, SLOWMODE_WAIT_X): `FloodWait(seconds)`.
- Errors that no retry can fix (blocked, forbidden, privacy, banned, bad peer...): `PermanentError(code)`.
- The account's session is unusable (AUTH_KEY_UNREGISTERED, SESSION_REVOKED, AUTH_KEY_DUPLICATED, a
  deactivated or banned account): `AuthError(code)`; the gateway stops the agent and shows the code.
- Anything else (network, timeouts, Telegram's 5xx): `TransportError`, retried by the engine.
"""

from __future__ import annotations

import asyncio

from telethon import errors

from conversations.transport.base import AuthError, FloodWait, PermanentError, TransportError

# Telethon's generated error classes do not carry their code; rebuild it from its own table.
_CODE_OF_CLASS: dict[type, str] = {cls: code for code, cls in errors.rpc_errors_dict.items()}
_CODE_OF_CLASS.update(
    {cls: pattern.split("(")[0] + "X" for pattern, cls in errors.rpc_errors_re if "(" in pattern}
)

AUTH_CODES = frozenset(
    {
        "AUTH_KEY_UNREGISTERED",
        "AUTH_KEY_INVALID",
        "AUTH_KEY_PERM_EMPTY",
        "AUTH_KEY_DUPLICATED",
        "SESSION_REVOKED",
        "SESSION_EXPIRED",
        "USER_DEACTIVATED",
        "USER_DEACTIVATED_BAN",
    }
)

# Codes that are transient even though Telegram files them under 400/403.
TRANSIENT_CODES = frozenset({"TIMEOUT", "RPC_CALL_FAIL", "MSG_WAIT_FAILED", "FILE_REFERENCE_EXPIRED"})

PERMANENT_CODES = frozenset(
    {
        "USER_IS_BLOCKED",
        "YOU_BLOCKED_USER",
        "CHAT_WRITE_FORBIDDEN",
        "CHAT_RESTRICTED",
        "CHAT_SEND_PLAIN_FORBIDDEN",
        "CHAT_SEND_STICKERS_FORBIDDEN",
        "CHAT_SEND_MEDIA_FORBIDDEN",
        "CHAT_GUEST_SEND_FORBIDDEN",
        "CHAT_ADMIN_REQUIRED",
        "CHANNEL_PRIVATE",
        "CHANNEL_INVALID",
        "PEER_FLOOD",
        "PEER_ID_INVALID",
        "USER_PRIVACY_RESTRICTED",
        "PRIVACY_PREMIUM_REQUIRED",
        "PREMIUM_ACCOUNT_REQUIRED",
        "ALLOW_PAYMENT_REQUIRED",
        "INPUT_USER_DEACTIVATED",
        "USER_BANNED_IN_CHANNEL",
        "USER_IS_BOT",
        "MESSAGE_TOO_LONG",
        "MESSAGE_EMPTY",
        "MSG_ID_INVALID",
        "REACTION_INVALID",
        "REACTION_EMPTY",
        "STICKERSET_INVALID",
        "STICKER_DOCUMENT_INVALID",
    }
)


def error_code(exc: errors.RPCError) -> str:
    """Telegram's code for an RPC error, e.g. USER_IS_BLOCKED or FLOOD_WAIT_X."""
    for cls in type(exc).__mro__:
        if cls in _CODE_OF_CLASS:
            return _CODE_OF_CLASS[cls]
    message = getattr(exc, "message", None)
    return str(message or type(exc).__name__)


def is_slow_mode(exc: BaseException) -> bool:
    return isinstance(exc, errors.SlowModeWaitError)


def translate(exc: BaseException) -> TransportError:
    """The protocol error for a Telethon (or network) exception."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, errors.FloodError) and getattr(exc, "seconds", None) is not None:
        return FloodWait(exc.seconds, f"{error_code(exc)}: Telegram asked to wait {exc.seconds}s")
    if isinstance(exc, errors.RPCError):
        code = error_code(exc)
        if code in AUTH_CODES or isinstance(exc, errors.AuthKeyError):
            return AuthError(code, f"{code}: the Telegram session is no longer valid")
        if code == "RANDOM_ID_DUPLICATE":
            # The message already went out; the sender looks it up instead of sending again.
            return PermanentError(code)
        if code in TRANSIENT_CODES or isinstance(exc, errors.ServerError):
            return TransportError(f"{code}: {exc}")
        if code in PERMANENT_CODES:
            return PermanentError(code)
        if isinstance(exc, errors.UnauthorizedError):
            return AuthError(code, f"{code}: the Telegram session is no longer valid")
        if isinstance(exc, (errors.BadRequestError, errors.ForbiddenError, errors.NotFoundError)):
            # Telegram rejected the request itself; sending it again cannot change the answer.
            return PermanentError(code)
        if isinstance(exc, errors.FloodError):
            return PermanentError(code)
        return TransportError(f"{code}: {exc}")
    if isinstance(exc, (ConnectionError, OSError, asyncio.TimeoutError, errors.common.BadMessageError)):
        return TransportError(f"connection to Telegram failed: {type(exc).__name__}: {exc}")
    return TransportError(f"{type(exc).__name__}: {exc}")
