"""Two guards for retrieval: a wall deadline on every socket operation, and decoding with a size cap.

- httpx and httpcore time each socket operation separately, so a server that trickles one byte just
  inside the read timeout can hold a request for ever (encode/httpx#1450). `DeadlineBackend` wraps
  httpcore's socket backend and gives every connect, TLS handshake, read and write only the time left
  until one deadline, so a whole fetch (all redirect hops, headers and body) ends by then.
- A small compressed body can expand a thousandfold per layer, and `Content-Encoding` may stack
  layers ("gzip, gzip"). `BoundedDecoder` undoes the layers while streaming and never lets any layer
  produce more than the cap, so memory and CPU stay bounded by the cap, not by what the body expands to.
"""

from __future__ import annotations

import ssl
import time
import zlib
from collections.abc import Iterable
from typing import Any

import httpcore

try:
    import brotli
except ImportError:  # pragma: no cover - brotli is in requirements.txt; without it "br" is not offered
    brotli = None

#: At most this many stacked Content-Encoding layers are undone.
MAX_ENCODINGS = 3
SUPPORTED_ENCODINGS = ("gzip", "deflate") + (("br",) if brotli is not None else ())
#: What a corrupt compressed body raises.
DECODE_ERRORS: tuple[type[Exception], ...] = (zlib.error,) + ((brotli.error,) if brotli is not None else ())


class DeadlineExceeded(Exception):
    """The fetch's wall deadline passed."""


def _time_left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the fetch's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: float) -> None:
        self._stream = stream
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _time_left(self._deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _time_left(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = _time_left(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's blocking socket backend, with every operation ending by `deadline` (monotonic)."""

    def __init__(self, deadline: float) -> None:
        self._backend = httpcore.SyncBackend()
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _time_left(self._deadline, timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, left, local_address, socket_options)
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.UnsupportedProtocol("retrieval connects over TCP only")

    def sleep(self, seconds: float) -> None:
        time.sleep(min(seconds, _time_left(self._deadline, None, httpcore.PoolTimeout)))


class UnsupportedEncoding(Exception):
    """A Content-Encoding that is not decoded (or too many stacked layers)."""


class _ZlibLayer:
    """gzip (any number of members) or deflate (zlib-wrapped or raw, as servers send both)."""

    def __init__(self, encoding: str) -> None:
        self._gzip = encoding == "gzip"
        self._may_be_raw = not self._gzip
        self._obj = self._new()
        self._tail = b""
        self._done = False
        self._later_member = False

    def _new(self, *, raw: bool = False) -> Any:
        if self._gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw else zlib.MAX_WBITS)

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most `limit` bytes of output; input not yet decoded is kept for the next call."""
        pending, self._tail = self._tail + data, b""
        out = bytearray()
        while len(out) < limit and not self._done:
            try:
                chunk = self._obj.decompress(pending, limit - len(out))
            except zlib.error:
                if self._later_member:
                    self._done = True  # trailing bytes after a complete gzip stream are ignored
                    break
                if not self._may_be_raw:
                    raise
                self._may_be_raw = False
                self._obj = self._new(raw=True)
                continue
            self._may_be_raw = False
            out += chunk
            consumed = len(pending) - len(self._obj.unconsumed_tail)
            pending = self._obj.unconsumed_tail
            if self._obj.eof:
                pending = self._obj.unused_data
                if not self._gzip:
                    self._done = True  # anything after the deflate stream is ignored
                    break
                self._obj = self._new()  # the next gzip member, if any
                self._later_member = True
            elif not chunk and not consumed:
                break
        self._tail = b"" if self._done else pending
        return bytes(out)

    def drain(self, limit: int) -> bytes:
        return self.decode(b"", limit)


class _BrotliLayer:
    def __init__(self) -> None:
        self._obj = brotli.Decompressor()
        self._tail = b""

    def decode(self, data: bytes, limit: int) -> bytes:
        """At most about `limit` bytes (brotli may overshoot by one buffer); the rest waits."""
        self._tail += data
        out = bytearray()
        while len(out) < limit:
            if self._obj.can_accept_more_data():
                if not self._tail:
                    break
                data, self._tail = self._tail, b""
            else:
                data = b""
            chunk = self._obj.process(data, output_buffer_limit=limit - len(out))
            out += chunk
            if not chunk and not data:
                break
        return bytes(out)

    def drain(self, limit: int) -> bytes:
        return self.decode(b"", limit)


class BoundedDecoder:
    """Undo a response's Content-Encoding layers while streaming, producing at most `limit` bytes.

    `feed` returns the decoded bytes of one raw chunk; `full` says the cap was reached (the rest of
    the body is not needed). Every layer, not only the last, stops at the cap: decoders never expand
    input that the cap would throw away.
    """

    def __init__(self, content_encoding: str, *, limit: int) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        names = [n for n in names if n != "identity"]
        names = ["gzip" if n == "x-gzip" else n for n in names]
        unsupported = [n for n in names if n not in SUPPORTED_ENCODINGS]
        if unsupported:
            raise UnsupportedEncoding(f"Content-Encoding {', '.join(unsupported)} is not supported")
        if len(names) > MAX_ENCODINGS:
            raise UnsupportedEncoding(
                f"Content-Encoding has {len(names)} layers; at most {MAX_ENCODINGS} are decoded"
            )
        # Layers were applied in the order listed, so they are undone from the last one.
        self._layers = [_BrotliLayer() if n == "br" else _ZlibLayer(n) for n in reversed(names)]
        self.limit = limit
        self.size = 0

    @property
    def full(self) -> bool:
        return self.size >= self.limit

    def feed(self, data: bytes) -> bytes:
        room = self.limit - self.size
        if room <= 0:
            return b""
        for layer in self._layers:
            data = layer.decode(data, room)
        out = data[:room]
        self.size += len(out)
        return out

    def flush(self) -> bytes:
        """What the layers still hold once the body has ended (within the cap)."""
        out = bytearray()
        for index in range(len(self._layers)):
            room = self.limit - self.size - len(out)
            if room <= 0:
                break
            data = self._layers[index].drain(room)
            for layer in self._layers[index + 1 :]:
                data = layer.decode(data, room)
            out += data[:room]
        self.size += len(out)
        return bytes(out)
