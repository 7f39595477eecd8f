"""A hostile local web server for retrieval tests: trickled headers and bodies, slow redirect hops,
endless redirects, compressed bodies that expand without bound, and malformed redirect targets.

Trickling handlers wait on the server's stop event between bytes, so shutting the server down ends
them at once; every trickle is also bounded in length.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class HostileHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: Set by `running_hostile_site`.
    stop: threading.Event
    hits: list[str]
    #: name -> (Content-Encoding, body bytes), registered by tests for /encoded/<name>.
    bodies: dict[str, tuple[str, bytes]]
    #: Seconds between trickled bytes.
    interval = 0.05

    def log_message(self, *args):
        return

    def do_GET(self):  # noqa: N802
        self.hits.append(self.path)
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        try:
            if url.path == "/slow-headers":
                self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: ")
                self._trickle(b"a" * 400)
            elif url.path == "/slow-body":
                self._raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 400\r\n\r\n<p>")
                self._trickle(b"b" * 397)
            elif url.path == "/slow-hop":
                # About 0.4 s per hop: each hop alone is quick, the chain is not.
                hop = int(query.get("n", "0"))
                self._trickle(
                    f"HTTP/1.1 302 Found\r\nLocation: /slow-hop?n={hop + 1}\r\nContent-Length: 0\r\n\r\n".encode(),
                    interval=0.007,
                )
            elif url.path == "/loop":
                self._reply(302, b"", extra=[("Location", f"/loop?n={int(query.get('n', '0')) + 1}")])
            elif url.path == "/redirect":
                self._reply(302, b"", extra=[("Location", query["to"])])
            elif url.path.startswith("/encoded/"):
                encoding, body = self.bodies[url.path.removeprefix("/encoded/")]
                # "a|b" sends two Content-Encoding header lines.
                headers = [("Content-Encoding", e) for e in encoding.split("|") if e]
                self._reply(200, body, extra=headers)
            else:
                self._reply(200, b"<p>Plain page.</p>")
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up, as it should

    def _raw(self, data: bytes) -> None:
        self.wfile.write(data)
        self.wfile.flush()

    def _trickle(self, data: bytes, *, interval: float | None = None) -> None:
        for index in range(len(data)):
            if self.stop.wait(self.interval if interval is None else interval):
                return
            self._raw(data[index : index + 1])
        self.close_connection = True

    def _reply(self, status: int, body: bytes, *, extra: list[tuple[str, str]] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        for key, value in extra or []:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


@dataclass
class HostileSite:
    url: str
    hits: list[str]
    bodies: dict[str, tuple[str, bytes]]


@contextmanager
def running_hostile_site() -> Iterator[HostileSite]:
    stop = threading.Event()
    hits: list[str] = []
    bodies: dict[str, tuple[str, bytes]] = {}
    handler = type("Handler", (HostileHandler,), {"stop": stop, "hits": hits, "bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield HostileSite(f"http://127.0.0.1:{server.server_address[1]}", hits, bodies)
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
