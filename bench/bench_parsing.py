"""Reply parsing benchmark: parse time per reply of up to 1 MB, ordinary and hostile.

The goal is under 100 ms of parse time (`llm.parsing.parse_reply`: extraction and validation) per reply
of up to 1 MB. For each reply it prints the median of RUNS parses beside the goal. The hostile replies
are the families of llm/tests/test_hostile_replies.py at full size.

Run: .venv/bin/python bench/bench_parsing.py
It sets Django up on a throwaway SQLite database, as bench_prompt.py does.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from bench_prompt import setup_django

RUNS = 7
GOAL_MS = 100.0
MB = 1_000_000


def replies() -> dict[str, str]:
    def tasks(*items: dict) -> str:
        return json.dumps(list(items), ensure_ascii=False)

    typical = tasks(
        {"kind": "think", "text": "She asked about rye; answer warmly."},
        {"kind": "send", "id": "s1", "text": "Yes! Fresh rye this morning 🍞", "reply_to": 41},
        {"kind": "remember", "id": "m1", "content": "Alice likes rye bread."},
        {"kind": "react", "emoji": "❤", "message_id": 41},
    )
    return {
        "typical reply (4 tasks)": typical,
        "typical reply, fenced with prose": "Sure!\n```json\n" + typical + "\n```\nDone.",
        "legacy Markdown reply": "# «think»\nHm.\n# «send» 41\nYes!\n# «wait»\ndelay: 5\n# «send»\nMore?",
        "1 MB: 500 sends of 2 KB": tasks(*[{"kind": "send", "text": "crumb " * 330}] * 500),
        "1 MB: one long send (split)": tasks({"kind": "send", "text": "A sentence that goes on. " * 40_000}),
        "1 MB: plain prose with brackets": "word [x] {y} " * (MB // 13),
        "1 MB: legacy send": "# «send»\n" + "word " * (MB // 5),
        "hostile: '[' x 20000": "[" * 20_000,
        "hostile: '[' x 1 MB": "[" * MB,
        "hostile: '{\"kind\"' x 5000": '{"kind"' * 5000,
        "hostile: '{\"kind\"' x 1 MB": '{"kind"' * (MB // 7),
        "hostile: '[{\"kind\":' x 1 MB": '[{"kind":' * (MB // 9),
        "hostile: unclosed 1 MB string": '[{"kind":"send","text":"' + "x" * MB,
        "hostile: '[{\"a\":1}' x 1 MB": '[{"a":1}' * (MB // 8),
        "hostile: '{\"' x 1 MB": '{"' * (MB // 2),
        "hostile: '[]' x 1 MB": "[]" * (MB // 2),
        "hostile: 30,000 tasks (1 MB)": tasks(*[{"kind": "send", "text": "hi there"}] * 30_000),
    }


def median_ms(text: str) -> float:
    from llm.parsing import parse_reply

    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        parse_reply(text)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> int:
    with tempfile.TemporaryDirectory() as workdir:
        setup_django(Path(workdir))
        print(f"reply parsing, median of {RUNS} runs (goal: under {GOAL_MS:.0f} ms per reply up to 1 MB)")
        worst = 0.0
        for name, text in replies().items():
            ms = median_ms(text)
            worst = max(worst, ms)
            verdict = "ok" if ms < GOAL_MS else "OVER"
            print(f"  {name:<36} {len(text):>9,} chars  {ms:8.1f} ms   goal < {GOAL_MS:.0f} ms  {verdict}")
        print(f"worst median: {worst:.1f} ms (goal < {GOAL_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
