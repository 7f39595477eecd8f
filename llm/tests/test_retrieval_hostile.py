"""Retrieval against a hostile loopback server: its wall deadline, its decoded-size cap, its redirect
bound and its answers to malformed URLs hold. The caps are passed in small (a 1.5 s deadline) so the
tests stay fast; each time bound is asserted to within 10% of the deadline given."""

from __future__ import annotations

import functools
import gzip
import threading
import time
import tracemalloc
import zlib

import brotli
import pytest

from llm.retrieval import MAX_BYTES, fetch_page
from llm.retrieval_stream import BoundedDecoder
from llm.tests.hostile_site import running_hostile_site

DEADLINE = 1.5


@pytest.fixture
def hostile(settings):
    settings.CINDY_RETRIEVAL_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    with running_hostile_site() as site:
        yield site


def _timed_fetch(url: str, **kwargs):
    started = time.monotonic()
    result = fetch_page(url, timeout=DEADLINE, **kwargs)
    return result, time.monotonic() - started


def _assert_near_deadline(elapsed: float) -> None:
    assert DEADLINE * 0.9 <= elapsed <= DEADLINE * 1.1, f"took {elapsed:.2f} s for a {DEADLINE} s deadline"


# --- One wall deadline -------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/slow-headers", "/slow-body"])
def test_a_trickling_server_is_cut_off_at_the_deadline(hostile, path):
    result, elapsed = _timed_fetch(hostile.url + path)

    _assert_near_deadline(elapsed)
    assert not result.ok
    assert result.content == f"Error: Request Timeout - the request timed out after {DEADLINE:g} seconds."


def test_slow_redirect_hops_share_one_deadline(hostile):
    result, elapsed = _timed_fetch(hostile.url + "/slow-hop")

    # Each hop takes about a quarter of the deadline (longer on a busy machine): several hops start,
    # and the chain still ends at the deadline rather than after the hop limit.
    assert 2 <= len(hostile.hits) <= 5
    _assert_near_deadline(elapsed)
    assert "timed out after 1.5 seconds" in result.content


def test_a_name_that_never_resolves_is_given_up_at_the_deadline(hostile):
    release = threading.Event()

    def stuck_resolver(host: str, port: int) -> list[str]:
        release.wait(30)
        return ["127.0.0.1"]

    try:
        result, elapsed = _timed_fetch("http://stuck.test/", resolve=stuck_resolver)
    finally:
        release.set()

    _assert_near_deadline(elapsed)
    assert result.content == "Not fetched: cannot resolve stuck.test: no answer in time"


# --- Decompression bombs -----------------------------------------------------------------------


@functools.cache
def _expanding_page() -> bytes:
    """Raw deflate of a 60 MB page (30 times the 2 MB cap), compressed once per test run."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = b"A" * 1_000_000
    parts = [compressor.compress(b"<html><body><p>")]
    parts += [compressor.compress(block) for _ in range(60)]
    return b"".join(parts) + compressor.flush()


def _gzip_wrap(raw_deflate: bytes, size: int) -> bytes:
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    crc = zlib.crc32(b"<html><body><p>" + b"A" * (size - 15))
    return header + raw_deflate + crc.to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")


def _encode(layers: list[str]) -> bytes:
    """The 60 MB page encoded with `layers` in order; the first layer reuses the precompressed page."""
    size = 15 + 60_000_000
    first, rest = layers[0], layers[1:]
    if first == "gzip":
        data = _gzip_wrap(_expanding_page(), size)
    elif first == "deflate":
        data = _expanding_page()
    else:  # br: brotli's fastest level keeps the test quick
        data = brotli.compress(b"<html><body><p>" + b"A" * 60_000_000, quality=0)
    for layer in rest:
        data = {"gzip": gzip.compress, "deflate": zlib.compress}.get(layer, brotli.compress)(data)
    return data


@pytest.mark.parametrize(
    "encoding",
    ["gzip", "deflate", "br", "gzip, gzip", "deflate, gzip", "gzip, br", "br, gzip, deflate"],
)
def test_a_decompression_bomb_stops_at_the_decoded_size_cap(hostile, encoding):
    hostile.bodies["bomb"] = (encoding, _encode([e.strip() for e in encoding.split(",")]))

    result = fetch_page(hostile.url + "/encoded/bomb", timeout=DEADLINE)

    assert result.ok and result.truncated
    assert MAX_BYTES * 0.9 <= result.size <= MAX_BYTES
    assert result.content.startswith("AAAA")


def test_repeated_content_encoding_headers_count_as_stacked_layers(hostile):
    hostile.bodies["bomb"] = ("gzip|gzip", _encode(["gzip", "gzip"]))

    result = fetch_page(hostile.url + "/encoded/bomb", timeout=DEADLINE)

    assert result.truncated and result.size == MAX_BYTES and result.content.startswith("AAAA")


def test_a_smaller_cap_can_be_given(hostile):
    hostile.bodies["bomb"] = ("gzip, gzip", _encode(["gzip", "gzip"]))

    result = fetch_page(hostile.url + "/encoded/bomb", timeout=DEADLINE, max_bytes=100_000)

    assert result.truncated and 90_000 <= result.size <= 100_000


def test_no_layer_expands_past_the_cap_even_when_the_whole_body_arrives_at_once():
    bomb = _encode(["gzip", "gzip"])
    decoder = BoundedDecoder("gzip, gzip", limit=1_000_000)

    tracemalloc.start()
    try:
        out = decoder.feed(bomb)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert len(out) == 1_000_000 and decoder.full
    assert peak < 5 * 1_000_000, f"decoding peaked at {peak} bytes for a 1,000,000-byte cap"


@pytest.mark.parametrize("encoding", ["deflate", "gzip", "br"])
def test_ordinary_compressed_pages_are_read_whole(hostile, encoding):
    page = b"<html><body><p>Rye bread is dense.</p></body></html>"
    body = {"gzip": gzip.compress(page), "deflate": zlib.compress(page), "br": brotli.compress(page)}[
        encoding
    ]
    hostile.bodies["page"] = (encoding, body)

    result = fetch_page(hostile.url + "/encoded/page", timeout=DEADLINE)

    assert result.ok and not result.truncated and result.content == "Rye bread is dense."


def test_raw_deflate_and_concatenated_gzip_members_are_read(hostile):
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    hostile.bodies["raw"] = ("deflate", raw.compress(b"<p>Raw rye.</p>") + raw.flush())
    hostile.bodies["members"] = ("gzip", gzip.compress(b"<p>Rye ") + gzip.compress(b"and spelt.</p>"))

    assert fetch_page(hostile.url + "/encoded/raw", timeout=DEADLINE).content == "Raw rye."
    assert fetch_page(hostile.url + "/encoded/members", timeout=DEADLINE).content == "Rye and spelt."


@pytest.mark.parametrize(
    ("encoding", "note"),
    [
        ("compress", "Content-Encoding compress is not supported"),
        ("gzip, gzip, gzip, gzip", "Content-Encoding has 4 layers; at most 3 are decoded"),
    ],
)
def test_unsupported_or_deeply_stacked_encodings_get_a_note(hostile, encoding, note):
    hostile.bodies["odd"] = (encoding, b"\x00" * 100)

    assert fetch_page(hostile.url + "/encoded/odd", timeout=DEADLINE).content == f"Not fetched: {note}"


def test_a_corrupt_compressed_body_gets_a_note(hostile):
    hostile.bodies["corrupt"] = ("gzip", b"\x1f\x8b not really gzip")

    result = fetch_page(hostile.url + "/encoded/corrupt", timeout=DEADLINE)

    assert not result.ok and result.content.startswith("Not fetched: the body could not be decoded")


# --- Redirects and malformed URLs --------------------------------------------------------------


def test_endless_redirects_stop_at_the_hop_limit(hostile):
    result = fetch_page(hostile.url + "/loop", timeout=DEADLINE, max_redirects=4)

    assert result.content == "Not fetched: more than 4 redirects"
    assert len(hostile.hits) == 5


def test_every_hop_is_resolved_checked_and_pinned(hostile):
    port = hostile.url.rsplit(":", 1)[1]
    resolved: list[str] = []

    def resolver(host: str, p: int) -> list[str]:
        resolved.append(host)
        return ["127.0.0.1"]

    result = fetch_page(
        f"http://first.test:{port}/redirect?to=http://second.test:{port}/page",
        resolve=resolver,
        timeout=DEADLINE,
    )

    assert result.ok and result.content == "Plain page."
    assert resolved == ["first.test", "second.test"]


@pytest.mark.parametrize(
    "url",
    [
        "http://x:99999/",
        "http://h:1:2/",
        "http://[::1/",
        "http://h:0/",
        "http://",
        "http://[not-an-address]/",
        "http://" + "a" * 70 + ".com/",
        "http://bad host.test/",
    ],
)
def test_malformed_urls_get_a_short_note(url):
    result = fetch_page(url, timeout=DEADLINE, resolve=lambda host, port: ["93.184.216.34"])

    assert not result.ok and result.content.startswith("Not fetched: ")
    assert len(result.content) < 400


@pytest.mark.parametrize(
    ("target", "note"),
    [
        ("http://x:99999/", "Not fetched: 'http://x:99999/' is not a valid URL"),
        ("http://[::1/", "Not fetched: the redirect to 'http://[::1/' is not a valid URL"),
    ],
)
def test_a_malformed_redirect_target_gets_a_short_note(hostile, target, note):
    result = fetch_page(f"{hostile.url}/redirect?to={target}", timeout=DEADLINE)

    assert result.content.startswith(note)
