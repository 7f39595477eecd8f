"""Inbound → LLM request CPU: prompt assembly for a 500-message history plus the SDK's request building.

For each route (Gemini through google-genai, OpenAI-compatible through openai) it times, in the same
run and on the same database, the request as sent now (`provider.generate`, which hands the SDK the
history already in wire format) and the SDK's own conversion of every turn (the previous path), and
prints the medians, their ratio and the goal. Prompt assembly is also timed with the rendered-message
cache (`llm.conversation.history_window`) switched off, which renders every history message on each
turn as before it existed. CPU time of the calling thread (`time.thread_time`); the fake LLM server
runs in a child process, as a real LLM is remote, so its work neither counts nor slows the caller
(in the same process, its thread's GIL and cache contention made the figure swing by half).

Run: .venv/bin/python bench/bench_request.py
It builds its own SQLite database in a temporary directory and touches nothing else.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_prompt import HISTORY, populate, setup_django  # noqa: E402

RUNS = 7
GOAL_MS = 25.0
AIM_MS = 15.0  # the margin the goal needs on a loaded machine


def _median_cpu_ms(action: Callable[[], object]) -> float:
    samples = []
    for _ in range(RUNS):
        started = time.thread_time()
        action()
        samples.append(time.thread_time() - started)
    return statistics.median(samples) * 1000


class ServerProcess:
    """The fake LLM server in a process of its own, as the real LLM is: its work (reading a 77 kB body,
    answering) neither holds this process's GIL nor shares its caches, so the figure is the caller's own."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        self._process = context.Process(target=self._serve, args=(sender,), daemon=True)
        self._process.start()
        self.url = receiver.recv()

    @staticmethod
    def _serve(sender) -> None:
        from cindy_site.testing.fake_llm import FakeLLMServer

        server = FakeLLMServer().start()
        server.set_default_reply("[]")
        sender.send(server.url)
        threading.Event().wait()

    def stop(self) -> None:
        self._process.terminate()
        self._process.join()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cindy-bench-") as tmp:
        setup_django(Path(tmp))
        from cindy_site.clock import FakeClock, set_clock
        from llm.prompt import TurnContext, build_plan_request
        from llm.providers.gemini import GeminiProvider, build_config, build_contents
        from llm.providers.openai_compat import OpenAICompatibleProvider, build_messages

        conversation, last = populate()
        set_clock(FakeClock(last + dt.timedelta(minutes=1)))
        server = ServerProcess()
        gemini = GeminiProvider(api_key="bench", base_url=server.url)
        openai = OpenAICompatibleProvider(
            name="openai", key_variable="OPENAI_API_KEY", api_key="bench", base_url=server.url + "/v1"
        )

        def build():
            return build_plan_request(conversation, TurnContext(target_message_id=HISTORY - 1))

        def gemini_old():
            request = build()
            gemini._client.models.generate_content(
                model="bench", contents=build_contents(request), config=build_config(request)
            )

        def openai_old():
            openai._client.chat.completions.create(model="bench", messages=build_messages(build()))

        from llm import conversation as history_cache

        try:
            build_ms = _median_cpu_ms(build)
            cache_size, history_cache.RENDER_CACHE_SIZE = history_cache.RENDER_CACHE_SIZE, 0
            try:
                uncached_ms = _median_cpu_ms(build)
            finally:
                history_cache.RENDER_CACHE_SIZE = cache_size
            rows = [
                (
                    "Gemini",
                    _median_cpu_ms(gemini_old),
                    _median_cpu_ms(lambda: gemini.generate(build(), model="bench")),
                ),
                (
                    "OpenAI",
                    _median_cpu_ms(openai_old),
                    _median_cpu_ms(lambda: openai.generate(build(), model="bench")),
                ),
            ]
        finally:
            server.stop()
        print(
            f"prompt assembly alone ({HISTORY}-message history): median {build_ms:.1f} ms CPU over {RUNS} runs "
            f"(without the rendered-message cache: {uncached_ms:.1f} ms, {uncached_ms / build_ms:.1f}x less)"
        )
        for label, old, new in rows:
            verdict = "meets" if new <= GOAL_MS else "MISSES"
            aim = "within" if new <= AIM_MS else "over"
            print(
                f"inbound → LLM request CPU, {HISTORY} messages of history, {label} route: median {new:.1f} ms "
                f"(SDK converting every turn: {old:.1f} ms, {old / new:.1f}x less); goal ≤ {GOAL_MS:.0f} ms, "
                f"{verdict}; {aim} the {AIM_MS:.0f} ms aim ({RUNS} runs)"
            )


if __name__ == "__main__":
    main()
