"""Retrieval worst cases: page text from hostile markup, and decoding a stacked decompression bomb.

For 2 MB of each markup that makes html.parser quadratic, it prints the median time of
`llm.html_text.html_to_text` beside its goal (well inside the 10 s fetch deadline). For a
"gzip, gzip" body that expands to 200 MB, it prints the median time to decode up to the 2 MB cap.

Run: .venv/bin/python bench/bench_retrieval.py
It needs no database and touches nothing.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 5
PAGE_BYTES = 2_000_000
TEXT_GOAL_SECONDS = 3.0
BOMB_GOAL_SECONDS = 0.5
MARKUP = ["<a", "</", "<?", "<!", "<!--", "<![CDATA[", "<p>x</p>"]


def median_seconds(work) -> float:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def stacked_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"A" * 1_000_000
    inner = b"".join(compressor.compress(block) for _ in range(200)) + compressor.flush()
    return gzip.compress(inner)


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from llm.html_text import html_to_text
    from llm.retrieval_stream import BoundedDecoder

    print(f"page text, {PAGE_BYTES:,} bytes of each markup, median of {RUNS} (goal < {TEXT_GOAL_SECONDS} s):")
    for unit in MARKUP:
        page = unit * (PAGE_BYTES // len(unit))
        seconds = median_seconds(lambda page=page: html_to_text(page))
        print(f"  {unit!r:14} {seconds:6.3f} s   goal < {TEXT_GOAL_SECONDS} s")

    bomb = stacked_bomb()
    seconds = median_seconds(lambda: BoundedDecoder("gzip, gzip", limit=2_000_000).feed(bomb))
    print(
        f"decoding a {len(bomb):,}-byte 'gzip, gzip' body (200 MB inside) to the 2 MB cap: "
        f"{seconds:.3f} s   goal < {BOMB_GOAL_SECONDS} s"
    )


if __name__ == "__main__":
    main()
