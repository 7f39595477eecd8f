"""Running a socket scenario from a synchronous test, with every wait bounded.

`run_scenario` runs the coroutine function through `async_to_sync`, so the consumer's and the test's
`database_sync_to_async` calls run on the test's thread and its connection. A scenario that takes
longer than `SCENARIO_SECONDS` fails with a message instead of hanging, and so does a task it leaves
behind: `asyncio.run` waits for every task of its loop at the end, so one task that ignores its
cancellation (as the relay once did when the Redis client swallowed it) would hang the suite.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

T = TypeVar("T")

#: The most one `receive_json_from` waits for the next message.
RECEIVE_TIMEOUT = 5
#: The most a whole scenario may take; the slowest here take about a second.
SCENARIO_SECONDS = 30
#: How long the tasks a scenario started (the relay, channel-layer cleaners) get to end by themselves.
SETTLE_SECONDS = 5


async def receive_kind(
    communicator: WebsocketCommunicator, kind: str, *, skip: tuple[str, ...] = ("agents", "snapshot")
) -> dict[str, Any]:
    """The next message of type `kind`; messages of the types in `skip` before it are dropped, any
    other type fails the test. Bounded as a whole, not only per message."""
    deadline = asyncio.get_running_loop().time() + 3 * RECEIVE_TIMEOUT
    dropped: list[str] = []
    while asyncio.get_running_loop().time() < deadline:
        message = await communicator.receive_json_from(timeout=RECEIVE_TIMEOUT)
        if message["type"] == kind:
            return message
        assert message["type"] in skip, message
        dropped.append(message["type"])
    raise AssertionError(f"no {kind!r} message within {3 * RECEIVE_TIMEOUT} s; only {dropped}")


def _describe(tasks: set[asyncio.Task[Any]]) -> str:
    return ", ".join(sorted(f"{task.get_name()} ({task.get_coro()!r})" for task in tasks))


async def _settle(others: set[asyncio.Task[Any]], *, failing: bool) -> None:
    """Give the scenario's leftover tasks SETTLE_SECONDS to end, then stop the rest (cancelling
    again and again, since a cancellation can be swallowed) and fail naming them."""
    if not others:
        return
    if not failing:
        _, others = await asyncio.wait(others, timeout=SETTLE_SECONDS)
        if not others:
            return
    stuck = set(others)
    for _ in range(50):
        for task in others:
            task.cancel()
        _, others = await asyncio.wait(others, timeout=0.1)
        if not others:
            break
    if failing:
        return
    left = f"; still running even after 50 cancellations: {_describe(others)}" if others else ""
    raise AssertionError(
        f"tasks still running {SETTLE_SECONDS} s after the scenario ended: {_describe(stuck)}{left}"
    )


def run_scenario(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run `scenario()` on a fresh event loop; fail if it takes over SCENARIO_SECONDS or leaves a task
    running (the relay stops with its last socket)."""

    async def bounded() -> T:
        before = asyncio.all_tasks()
        failing = True
        limit = asyncio.timeout(SCENARIO_SECONDS)
        try:
            async with limit:
                result = await scenario()
            failing = False
            return result
        except TimeoutError:
            if limit.expired():
                raise AssertionError(
                    f"the socket scenario did not finish within {SCENARIO_SECONDS} s"
                ) from None
            raise
        finally:
            await _settle(asyncio.all_tasks() - before - {asyncio.current_task()}, failing=failing)

    return async_to_sync(bounded)()
