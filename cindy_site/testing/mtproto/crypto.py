"""The server side of MTProto's key exchange and of MTProto 2.0 message encryption.

Everything on the wire is built and parsed with Telethon's own TL classes, AES-IGE and `AuthKey`, so
the client under test and this server agree by construction on serialisation and on the primitives;
what is implemented here is only what a server computes.

The RSA key is the stand-in's own (`ServerKey`): its public half is registered with the client through
`telethon.crypto.rsa.add_key`, under the fingerprint Telegram defines (the last 8 bytes of
SHA-1(TL bytes of n, TL bytes of e)). Telethon 1.45 encrypts `p_q_inner_data` as
`RSA(SHA1(data) + data + random padding to 255 bytes)` (no RSA_PAD), which is what is decrypted here.
"""

from __future__ import annotations

import os
import secrets
import struct
import time
from dataclasses import dataclass, field
from hashlib import sha1, sha256
from pathlib import Path
from types import SimpleNamespace

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa as crypto_rsa
from telethon.crypto import AES, AuthKey
from telethon.crypto import rsa as telethon_rsa
from telethon.extensions import BinaryReader
from telethon.helpers import generate_key_data_from_nonce
from telethon.network.mtprotostate import MTProtoState
from telethon.tl import functions, types

# Telegram's 2048-bit safe prime, used for the key exchange (g = 3) and for SRP (g = 3).
DH_PRIME = int(
    "C71CAEB9C6B1C9048E6C522F70F13F73980D40238E3E21C14934D037563D930F48198A0AA7C14058229493D22530F4DB"
    "FA336F6E0AC925139543AED44CCE7C3720FD51F69458705AC68CD4FE6B6B13ABDC9746512969328454F18FAF8C595F64"
    "2477FE96BB2A941D5BCD1D4AC8CC49880708FA9B378E3C4F3A9060BEE67CF9A4A4A695811051907E162753B56B0F6B41"
    "0DBA74D8A84B2A14B3144E0EF1284754FD17ED950D5965B4B9DD46582DB1178D169C6BC465B0D6FF9CA3928FEF5B9AE4"
    "E418FC15E83EBEA0F87FA9FF5EED70050DED2849F47BF959D956850CE929851F0D8115F635B105EE2E4E15D04B2454BF"
    "6F4FADF034B10403119CD8E3B92FCC5B",
    16,
)
DH_G = 3
# pq = p * q, the proof-of-work of step 1 (Telethon factorises it).
PQ_P, PQ_Q = 1229739323, 1402015859


class HandshakeError(Exception):
    """The client's key-exchange message does not match what this server sent or expects."""


class ServerKey:
    """The stand-in's RSA key pair. `public_pem` is what the client registers."""

    def __init__(self, private: crypto_rsa.RSAPrivateKey) -> None:
        self._private = private
        numbers = private.private_numbers()
        self.n = numbers.public_numbers.n
        self.e = numbers.public_numbers.e
        self.d = numbers.d
        self.public_pem = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.PKCS1
        )
        # Telethon's own fingerprint function reads only n and e.
        self.fingerprint = telethon_rsa._compute_fingerprint(SimpleNamespace(n=self.n, e=self.e))

    @classmethod
    def generate(cls) -> ServerKey:
        return cls(crypto_rsa.generate_private_key(public_exponent=65537, key_size=2048))

    @classmethod
    def load_or_create(cls, private_path: Path) -> ServerKey:
        """The key stored at `private_path`, or a new one written there (so restarts keep it)."""
        if private_path.exists():
            private = serialization.load_pem_private_key(private_path.read_bytes(), password=None)
            if not isinstance(private, crypto_rsa.RSAPrivateKey) or private.key_size != 2048:
                raise ValueError(
                    f"{private_path}: not a 2048-bit RSA private key; delete it to make a new one"
                )
            return cls(private)
        key = cls.generate()
        private_path.parent.mkdir(parents=True, exist_ok=True)
        private_path.write_bytes(
            key._private.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        return key

    def decrypt_inner(self, encrypted: bytes) -> bytes:
        """The TL bytes inside `SHA1(data) + data + padding`, checked against the SHA-1."""
        block = pow(int.from_bytes(encrypted, "big"), self.d, self.n).to_bytes(255, "big")
        digest, rest = block[:20], block[20:]
        with BinaryReader(rest) as reader:
            inner = reader.tgread_object()
        data = bytes(inner)
        if sha1(data).digest() != digest:
            raise HandshakeError("p_q_inner_data does not match its SHA-1: wrong RSA key or padding")
        return data


def register_public_key(pem: bytes | str) -> None:
    """Make this process's Telethon clients accept a server with this public key."""
    telethon_rsa.add_key(pem.decode() if isinstance(pem, bytes) else pem, old=False)


def _int_bytes(value: int) -> bytes:
    return telethon_rsa.get_byte_array(value)


@dataclass
class Handshake:
    """One connection's key exchange in progress (the three unencrypted round trips)."""

    key: ServerKey
    nonce: int = 0
    server_nonce: int = 0
    new_nonce: int = 0
    a: int = 0
    tmp_key: bytes = b""
    tmp_iv: bytes = b""
    step: int = 0
    done: AuthKey | None = field(default=None)

    def answer(self, request) -> object:
        if isinstance(request, (functions.ReqPqMultiRequest, functions.ReqPqRequest)):
            return self._res_pq(request)
        if isinstance(request, functions.ReqDHParamsRequest):
            return self._dh_params(request)
        if isinstance(request, functions.SetClientDHParamsRequest):
            return self._dh_gen(request)
        raise HandshakeError(f"{type(request).__name__} is not a key-exchange message")

    def _check_nonces(self, request, step: int) -> None:
        if self.step != step:
            raise HandshakeError(f"{type(request).__name__} out of order (after step {self.step})")
        if request.nonce != self.nonce or request.server_nonce != self.server_nonce:
            raise HandshakeError(f"{type(request).__name__}: nonce or server_nonce does not match")

    def _res_pq(self, request) -> types.ResPQ:
        self.nonce = request.nonce
        self.server_nonce = int.from_bytes(os.urandom(16), "big", signed=True)
        self.step = 1
        return types.ResPQ(
            nonce=self.nonce,
            server_nonce=self.server_nonce,
            pq=_int_bytes(PQ_P * PQ_Q),
            server_public_key_fingerprints=[self.key.fingerprint],
        )

    def _dh_params(self, request) -> types.ServerDHParamsOk:
        self._check_nonces(request, 1)
        if request.public_key_fingerprint != self.key.fingerprint:
            raise HandshakeError(f"unknown RSA key fingerprint {request.public_key_fingerprint}")
        with BinaryReader(self.key.decrypt_inner(request.encrypted_data)) as reader:
            inner = reader.tgread_object()
        if not isinstance(inner, (types.PQInnerData, types.PQInnerDataDc)):
            raise HandshakeError(f"encrypted data holds {type(inner).__name__}, not p_q_inner_data")
        if (inner.nonce, inner.server_nonce) != (self.nonce, self.server_nonce):
            raise HandshakeError("p_q_inner_data: nonce or server_nonce does not match")
        if {int.from_bytes(inner.p, "big"), int.from_bytes(inner.q, "big")} != {PQ_P, PQ_Q}:
            raise HandshakeError("p and q are not the factors of pq")
        self.new_nonce = inner.new_nonce
        self.a = secrets.randbits(2048)
        g_a = pow(DH_G, self.a, DH_PRIME)
        answer = bytes(
            types.ServerDHInnerData(
                nonce=self.nonce,
                server_nonce=self.server_nonce,
                g=DH_G,
                dh_prime=_int_bytes(DH_PRIME),
                g_a=_int_bytes(g_a),
                server_time=int(time.time()),
            )
        )
        self.tmp_key, self.tmp_iv = generate_key_data_from_nonce(self.server_nonce, self.new_nonce)
        self.step = 2
        return types.ServerDHParamsOk(
            nonce=self.nonce,
            server_nonce=self.server_nonce,
            encrypted_answer=AES.encrypt_ige(sha1(answer).digest() + answer, self.tmp_key, self.tmp_iv),
        )

    def _dh_gen(self, request) -> types.DhGenOk:
        self._check_nonces(request, 2)
        plain = AES.decrypt_ige(request.encrypted_data, self.tmp_key, self.tmp_iv)
        with BinaryReader(plain[20:]) as reader:
            inner = reader.tgread_object()
        if not isinstance(inner, types.ClientDHInnerData):
            raise HandshakeError(f"set_client_DH_params holds {type(inner).__name__}")
        if sha1(bytes(inner)).digest() != plain[:20]:
            raise HandshakeError("client_DH_inner_data does not match its SHA-1")
        g_b = int.from_bytes(inner.g_b, "big")
        if not 1 < g_b < DH_PRIME - 1:
            raise HandshakeError("g_b is outside (1, dh_prime - 1)")
        self.done = AuthKey(_int_bytes(pow(g_b, self.a, DH_PRIME)))
        self.step = 3
        return types.DhGenOk(
            nonce=self.nonce,
            server_nonce=self.server_nonce,
            new_nonce_hash1=self.done.calc_new_nonce_hash(self.new_nonce, 1),
        )


@dataclass
class Envelope:
    """One decrypted client message: MTProto 2.0's inner header and the TL body."""

    salt: int
    session_id: int
    msg_id: int
    seqno: int
    body: bytes


def decrypt_message(auth_key: AuthKey, packet: bytes) -> Envelope:
    """Decrypt a client packet (`auth_key_id msg_key data`), checking its msg_key."""
    msg_key = packet[8:24]
    aes_key, aes_iv = MTProtoState._calc_key(auth_key.key, msg_key, True)
    plain = AES.decrypt_ige(packet[24:], aes_key, aes_iv)
    if sha256(auth_key.key[88:120] + plain).digest()[8:24] != msg_key:
        raise HandshakeError("msg_key does not match the decrypted message")
    salt, session_id, msg_id, seqno, length = struct.unpack("<qqqii", plain[:32])
    if not 0 <= length <= len(plain) - 32:
        raise HandshakeError(f"message length {length} exceeds the decrypted data")
    return Envelope(salt, session_id, msg_id, seqno, plain[32 : 32 + length])


def encrypt_message(
    auth_key: AuthKey, *, salt: int, session_id: int, msg_id: int, seqno: int, body: bytes
) -> bytes:
    """A server packet for the client: MTProto 2.0 with the server-side key derivation (x = 8)."""
    data = struct.pack("<qqqii", salt, session_id, msg_id, seqno, len(body)) + body
    padding = os.urandom(-(len(data) + 12) % 16 + 12)
    msg_key = sha256(auth_key.key[96:128] + data + padding).digest()[8:24]
    aes_key, aes_iv = MTProtoState._calc_key(auth_key.key, msg_key, False)
    return struct.pack("<Q", auth_key.key_id) + msg_key + AES.encrypt_ige(data + padding, aes_key, aes_iv)
