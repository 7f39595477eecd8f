"""A local HTTP server that speaks the Gemini and OpenAI embedding wire formats, for the real SDKs.

- Gemini: `POST /v1beta/models/{model}:batchEmbedContents` (`{"requests": [{"model", "content":
  {"parts": [{"text"}]}, "taskType", "outputDimensionality"}]}` in, `{"embeddings": [{"values"}],
  "usageMetadata": {"promptTokenCount"}}` out) and `:embedContent` (one `content`, `{"embedding":
  {"values"}}` out).
- OpenAI: `POST .../embeddings` (`{"model", "input": [...], "dimensions", "encoding_format"}` in,
  `{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage":
  {"prompt_tokens", "total_tokens"}}` out).

A text's vector is its words hashed into the asked dimensions (a bag of words), so texts that share
words are near each other; a model's name is mixed into the hash, so two models' vectors of one text
differ. Tokens are counted as words. `fail_next(status, times)` fails requests in the provider's error
format; `hold()` makes requests wait until `release()` (a provider that is slow), with no sleeping.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GEMINI = re.compile(r"^/[^/]+/models/(?P<model>[^:/]+):(?P<method>batchEmbedContents|embedContent)$")


def bag_vector(text: str, *, dimensions: int, model: str) -> list[float]:
    vector = [0.0] * dimensions
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(f"{model}:{word}".encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dimensions] += 1.0 if digest[4] % 2 else -1.0
    return vector


def words(text: str) -> int:
    return len(re.findall(r"\w+", text))


@dataclass
class EmbeddingServer:
    url: str = ""
    requests: list[tuple[str, Any]] = field(default_factory=list)
    failures: list[int] = field(default_factory=list)
    report_usage: bool = True
    gate: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.gate.set()

    def fail_next(self, status: int, times: int = 1) -> None:
        self.failures.extend([status] * times)

    def hold(self) -> None:
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def texts(self) -> list[list[str]]:
        """The texts of each request, in order."""
        found = []
        for path, body in self.requests:
            if path.endswith(":batchEmbedContents"):
                found.append([r["content"]["parts"][0]["text"] for r in body["requests"]])
            elif path.endswith(":embedContent"):
                found.append([body["content"]["parts"][0]["text"]])
            else:
                found.append(list(body["input"]))
        return found

    def answer(self, path: str, body: Any) -> tuple[int, dict]:
        self.requests.append((path, body))
        self.gate.wait(timeout=30)
        gemini = GEMINI.match(path)
        if self.failures:
            status = self.failures.pop(0)
            if gemini:
                return status, {
                    "error": {"code": status, "message": "embedding failed", "status": "UNAVAILABLE"}
                }
            return status, {"error": {"message": "embedding failed", "type": "server_error", "code": None}}
        if gemini and gemini.group("method") == "batchEmbedContents":
            model = gemini.group("model")
            texts = [r["content"]["parts"][0]["text"] for r in body["requests"]]
            dims = [int(r.get("outputDimensionality") or 3072) for r in body["requests"]]
            out: dict = {
                "embeddings": [
                    {"values": bag_vector(t, dimensions=d, model=model)}
                    for t, d in zip(texts, dims, strict=True)
                ]
            }
            if self.report_usage:
                out["usageMetadata"] = {"promptTokenCount": sum(words(t) for t in texts)}
            return 200, out
        if gemini:
            text = body["content"]["parts"][0]["text"]
            dims = int(body.get("outputDimensionality") or 3072)
            return 200, {
                "embedding": {"values": bag_vector(text, dimensions=dims, model=gemini.group("model"))}
            }
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        dims = int(body.get("dimensions") or 1536)
        tokens = sum(words(t) for t in inputs)
        return 200, {
            "object": "list",
            "data": [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": bag_vector(t, dimensions=dims, model=body["model"]),
                }
                for i, t in enumerate(inputs)
            ],
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _handler(owner: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return

        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?", 1)[0]
            if not (GEMINI.match(path) or path.endswith("/embeddings")):
                status, body = 404, {"error": {"code": 404, "message": f"no route for {path}"}}
            else:
                status, body = owner.answer(path, json.loads(raw or b"null"))
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout test)

    return Handler


@contextmanager
def running_embedding_server() -> Iterator[EmbeddingServer]:
    owner = EmbeddingServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(owner))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    owner.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield owner
    finally:
        owner.release()
        server.shutdown()
        server.server_close()
