"""Loaded with `-p`: the test files that take longest run first.

`./test.sh` spreads whole files over four pytest-xdist processes (`--dist loadfile`), handing each
process the next file in order when it is free. A file that takes a minute and is handed out near the
end keeps one process busy long after the others are done; handed out longest first, the short files
fill in behind the long ones and the processes end close together (the longest-processing-time rule).

How long a file takes comes from `file_durations.json` beside this module: the seconds each file took
(setup, call and teardown of all its tests) in a recorded run on each database, written by
`./test.sh --record-durations=cindy_site/testing/file_durations.json` (and `--mariadb` for that
database's times). A file that is not there
(a new one) is placed by its marks: the scenario files, then those marked `slow` (real processes),
then `browser`, then the rest, each estimated at the longest recorded file of its kind, so a new slow
file is not left to the end.

pytest-xdist (3.7 on) sorts the files by how many tests each holds unless told not to
(`--loadscope-reorder`, on by default); that sort put a 70-second file of one test behind every file
of many quick ones. This plugin turns it off when it orders the files itself.

A file keeps its tests together and in their order, so module fixtures are shared as before; only the
order of files changes.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

#: The recorded seconds per test file and database (see the module docstring).
DURATIONS = Path(__file__).with_name("file_durations.json")

#: Lower runs earlier among the files with no recorded time; a file takes the lowest rank of its tests.
SCENARIOS, SLOW, BROWSER, OTHER = range(4)


def _rank(item: pytest.Item) -> int:
    if "/tests/scenarios/" in item.nodeid.replace("\\", "/"):
        return SCENARIOS
    if item.get_closest_marker("slow") is not None:
        return SLOW
    if item.get_closest_marker("browser") is not None:
        return BROWSER
    return OTHER


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def database() -> str:
    """The database this run's tests use, as `./test.sh` chose it (the key in `file_durations.json`)."""
    return "mariadb" if os.environ.get("DATABASE_URL", "").startswith("mysql") else "sqlite"


def recorded(path: Path = DURATIONS, db: str | None = None) -> dict[str, float]:
    """The seconds per file recorded for this run's database, or else for the other one (the files'
    order is much the same on both); empty when none were."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    db = db or database()
    times = data.get(db) or next((data[other] for other in sorted(data) if other != db and data[other]), {})
    return {str(name): float(seconds) for name, seconds in times.items()}


def order_files(items: list, seconds: dict[str, float]) -> None:
    """Sort `items` in place: whole files, longest first, each file's tests in their order.

    A file with no recorded time is estimated from its rank (the longest recorded file of that rank,
    or, with nothing recorded, the ranks alone decide); ties keep collection order.
    """
    rank: dict[str, int] = {}
    for item in items:
        name = _file(item.nodeid)
        rank[name] = min(rank.get(name, OTHER), _rank(item))
    longest_of_rank: dict[int, float] = defaultdict(float)
    for name, r in rank.items():
        if name in seconds:
            longest_of_rank[r] = max(longest_of_rank[r], seconds[name])
    position = {name: index for index, name in enumerate(rank)}

    def key(name: str) -> tuple[float, int, int]:
        estimate = seconds.get(name, longest_of_rank[rank[name]])
        return (-estimate, rank[name], position[name])

    items.sort(key=lambda item: key(_file(item.nodeid)))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-durations",
        metavar="PATH",
        default=None,
        help="write the seconds each test file took, for this run's database, into PATH (the JSON file "
        "that orders the files: cindy_site/testing/file_durations.json)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "loadscopereorder", None) is not None:
        config.option.loadscopereorder = False  # the order set below stands
    if config.getoption("record_durations"):
        config.pluginmanager.register(_Recorder(Path(config.getoption("record_durations"))), "file-durations")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    order_files(items, recorded())


class _Recorder:
    """Sums each file's phases from the reports (on the xdist controller, the workers' reports) and
    writes them, for this run's database, at the end of the run. A file with a failed test keeps the
    time recorded before (a failure cuts a file short or stretches it), or, with none, takes this one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds: dict[str, float] = defaultdict(float)
        self.failed: set[str] = set()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[_file(report.nodeid)] += report.duration
        if report.failed:
            self.failed.add(_file(report.nodeid))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput") or not self.seconds:
            return  # an xdist worker (the controller writes), or nothing ran
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            data = {}
        before = data.get(database(), {})
        times = {name: before.get(name, s) if name in self.failed else s for name, s in self.seconds.items()}
        data[database()] = {name: round(s, 1) for name, s in sorted(times.items())}
        self.path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
