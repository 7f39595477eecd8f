"""MTProto's TCP "full" transport, the framing Telethon's default `ConnectionTcpFull` speaks.

Each packet is `length:int32 seq:int32 payload crc32:uint32` (little endian), `length` counting all
four parts and `crc32` covering the three before it; each direction numbers its packets from 0.
A server-side transport error is a bare negative int32 as the payload (-404: unknown auth key).
"""

from __future__ import annotations

import asyncio
import struct
from zlib import crc32

MAX_PACKET = 16 * 1024 * 1024


class FramingError(Exception):
    """The peer sent something that is not a well-formed full-transport packet."""


def encode_packet(payload: bytes, seq: int) -> bytes:
    head = struct.pack("<ii", len(payload) + 12, seq) + payload
    return head + struct.pack("<I", crc32(head))


def decode_packet(data: bytes) -> tuple[int, bytes]:
    """(seq, payload) of one whole packet; raises FramingError on a bad length or checksum."""
    if len(data) < 12:
        raise FramingError(f"packet of {len(data)} bytes is shorter than the 12-byte envelope")
    length, seq = struct.unpack("<ii", data[:8])
    if length != len(data):
        raise FramingError(f"packet says {length} bytes but has {len(data)}")
    (checksum,) = struct.unpack("<I", data[-4:])
    if checksum != crc32(data[:-4]):
        raise FramingError(f"packet {seq}: crc32 {checksum:#x} does not match {crc32(data[:-4]):#x}")
    return seq, data[8:-4]


class FullTransport:
    """Reads and writes full-transport packets on one TCP stream, checking the peer's numbering."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._recv_seq = 0
        self._send_seq = 0

    async def read(self) -> bytes:
        head = await self.reader.readexactly(4)
        (length,) = struct.unpack("<i", head)
        if not 12 <= length <= MAX_PACKET:
            raise FramingError(f"packet length {length} is outside 12..{MAX_PACKET}")
        seq, payload = decode_packet(head + await self.reader.readexactly(length - 4))
        if seq != self._recv_seq:
            raise FramingError(f"packet number {seq} where {self._recv_seq} was expected")
        self._recv_seq += 1
        return payload

    def write(self, payload: bytes) -> None:
        self.writer.write(encode_packet(payload, self._send_seq))
        self._send_seq += 1

    def write_error(self, code: int) -> None:
        self.write(struct.pack("<i", code))
