"""Fernet tokens (the format of `cryptography.fernet`, which stored Telegram auth keys are in), made with
the standard library and pyaes (Telethon's own dependency), so a gateway does not load `cryptography`'s
OpenSSL bindings: about 11 MiB of resident memory (docs/performance.md, "Memory").

A token is base64url(0x80 | big-endian seconds (8 bytes) | IV (16) | AES-128-CBC ciphertext, PKCS#7
padded | HMAC-SHA256 of all that (32)); the 32-byte key is the signing key followed by the encryption
key. `telegram/tests/test_session_cipher.py` checks tokens both ways against `cryptography.fernet`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import struct
import time

import pyaes

VERSION = b"\x80"
BLOCK = 16


class InvalidToken(Exception):
    """The token is not a Fernet token made with this key (wrong key, altered or cut short)."""


def hkdf_sha256(secret: bytes, *, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF (RFC 5869) with SHA-256."""
    prk = hmac.new(salt, secret, hashlib.sha256).digest()
    out, block = b"", b""
    for counter in range(1, -(-length // 32) + 1):
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
    return out[:length]


class SessionCipher:
    """`encrypt` and `decrypt` as `cryptography.fernet.Fernet` (no time-to-live check)."""

    def __init__(self, key: bytes) -> None:
        raw = base64.urlsafe_b64decode(key)
        if len(raw) != 32:
            raise ValueError("a Fernet key is 32 bytes, base64url-encoded")
        self._signing, self._encryption = raw[:16], raw[16:]

    def _cbc(self, iv: bytes, data: bytes, *, encrypt: bool) -> bytes:
        mode = pyaes.AESModeOfOperationCBC(self._encryption, iv=iv)
        step = mode.encrypt if encrypt else mode.decrypt
        return b"".join(step(data[i : i + BLOCK]) for i in range(0, len(data), BLOCK))

    def encrypt(self, data: bytes) -> bytes:
        iv = os.urandom(BLOCK)
        pad = BLOCK - len(data) % BLOCK
        body = VERSION + struct.pack(">Q", int(time.time())) + iv
        body += self._cbc(iv, data + bytes([pad]) * pad, encrypt=True)
        return base64.urlsafe_b64encode(body + hmac.new(self._signing, body, hashlib.sha256).digest())

    def decrypt(self, token: bytes) -> bytes:
        try:
            raw = base64.urlsafe_b64decode(token)
        except (TypeError, binascii.Error):
            raise InvalidToken from None
        if len(raw) < 1 + 8 + BLOCK + BLOCK + 32 or raw[:1] != VERSION or (len(raw) - 57) % BLOCK:
            raise InvalidToken
        body, mac = raw[:-32], raw[-32:]
        if not hmac.compare_digest(hmac.new(self._signing, body, hashlib.sha256).digest(), mac):
            raise InvalidToken
        padded = self._cbc(body[9:25], body[25:], encrypt=False)
        pad = padded[-1]
        if not 1 <= pad <= BLOCK or padded[-pad:] != bytes([pad]) * pad:
            raise InvalidToken
        return padded[:-pad]
