"""The order test files are handed to the xdist processes in (cindy_site/testing/longest_first.py)."""

from __future__ import annotations

from dataclasses import dataclass

from cindy_site.testing.longest_first import pytest_collection_modifyitems


@dataclass
class _Item:
    nodeid: str
    marks: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


def test_scenario_slow_and_browser_files_come_first_and_each_file_stays_whole_and_in_order():
    items = [
        _Item("api/tests/test_a.py::one"),
        _Item("dashboard/tests/test_b.py::plain"),
        _Item("dashboard/tests/test_b.py::page", ("browser",)),
        _Item("engine/tests/test_c.py::kill", ("slow",)),
        _Item("api/tests/test_a.py::two"),
        _Item("engine/tests/scenarios/test_s.py::wendy", ("slow",)),
    ]
    pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [
        "engine/tests/scenarios/test_s.py::wendy",
        "engine/tests/test_c.py::kill",
        "dashboard/tests/test_b.py::plain",
        "dashboard/tests/test_b.py::page",
        "api/tests/test_a.py::one",
        "api/tests/test_a.py::two",
    ]
