"""Loaded with `-p`: the test files that start real processes run first.

`./test.sh` spreads whole files over two pytest-xdist processes (`--dist loadfile`), handing each
process the next file in collection order when it is free. The scenario files, the ones marked
`slow` (real gateways, workers, the MTProto stand-in) and the `browser` ones take minutes each, and
collected in directory order they came near the end, so one process still ran them long after the
other had finished. Handed out first, the short files fill in behind them and both processes end
close together. A file keeps its tests together and in their order, so module fixtures are shared as
before; only the order of files changes.
"""

from __future__ import annotations

import pytest

#: Lower runs earlier; a file takes the lowest rank of its tests.
SCENARIOS, SLOW, BROWSER, OTHER = range(4)


def _rank(item: pytest.Item) -> int:
    if "/tests/scenarios/" in item.nodeid.replace("\\", "/"):
        return SCENARIOS
    if item.get_closest_marker("slow") is not None:
        return SLOW
    if item.get_closest_marker("browser") is not None:
        return BROWSER
    return OTHER


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    files: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        files[path] = min(files.get(path, OTHER), _rank(item))
    order = {path: index for index, path in enumerate(files)}
    # Stable: files of one rank keep their collection order, and tests their order inside a file.
    items.sort(key=lambda item: (files[item.nodeid.split("::", 1)[0]], order[item.nodeid.split("::", 1)[0]]))
