"""The order test files are handed to the xdist processes in (cindy_site/testing/longest_first.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cindy_site.testing import longest_first
from cindy_site.testing.longest_first import order_files, recorded

ROOT = Path(__file__).resolve().parents[2]  # the checkout, for the child runs' PYTHONPATH


@dataclass
class _Item:
    nodeid: str
    marks: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


def _order(items: list[_Item], seconds: dict[str, float]) -> list[str]:
    order_files(items, seconds)
    return [i.nodeid for i in items]


def test_with_nothing_recorded_scenario_slow_and_browser_files_come_first_each_file_whole_and_in_order():
    items = [
        _Item("api/tests/test_a.py::one"),
        _Item("dashboard/tests/test_b.py::plain"),
        _Item("dashboard/tests/test_b.py::page", ("browser",)),
        _Item("engine/tests/test_c.py::kill", ("slow",)),
        _Item("api/tests/test_a.py::two"),
        _Item("engine/tests/scenarios/test_s.py::wendy", ("slow",)),
    ]
    assert _order(items, {}) == [
        "engine/tests/scenarios/test_s.py::wendy",
        "engine/tests/test_c.py::kill",
        "dashboard/tests/test_b.py::plain",
        "dashboard/tests/test_b.py::page",
        "api/tests/test_a.py::one",
        "api/tests/test_a.py::two",
    ]


def test_recorded_files_run_longest_first_whatever_their_marks():
    items = [
        _Item("engine/tests/test_kill.py::one", ("slow",)),
        _Item("cindy_site/tests/test_graph.py::whole"),
        _Item("engine/tests/test_kill.py::two", ("slow",)),
        _Item("api/tests/test_a.py::one"),
    ]
    seconds = {
        "engine/tests/test_kill.py": 12.0,
        "cindy_site/tests/test_graph.py": 40.0,
        "api/tests/test_a.py": 0.2,
    }
    assert _order(items, seconds) == [
        "cindy_site/tests/test_graph.py::whole",
        "engine/tests/test_kill.py::one",
        "engine/tests/test_kill.py::two",
        "api/tests/test_a.py::one",
    ]


def test_a_new_file_is_estimated_at_the_longest_recorded_file_of_its_kind():
    items = [
        _Item("api/tests/test_quick.py::one"),
        _Item("engine/tests/test_new_process.py::one", ("slow",)),
        _Item("engine/tests/test_old_process.py::one", ("slow",)),
        _Item("engine/tests/test_middling.py::one"),
        _Item("api/tests/test_new_plain.py::one"),
    ]
    seconds = {
        "api/tests/test_quick.py": 0.5,
        "engine/tests/test_old_process.py": 30.0,
        "engine/tests/test_middling.py": 10.0,
    }
    # The new slow file ties with the longest recorded slow file and keeps its collection place before
    # it; the new plain file is estimated at the longest plain one (10 s) and follows it.
    assert _order(items, seconds) == [
        "engine/tests/test_new_process.py::one",
        "engine/tests/test_old_process.py::one",
        "engine/tests/test_middling.py::one",
        "api/tests/test_new_plain.py::one",
        "api/tests/test_quick.py::one",
    ]


def test_the_recorded_times_are_read_per_database_or_else_the_other_s(tmp_path):
    path = tmp_path / "file_durations.json"
    assert recorded(path, "sqlite") == {}
    path.write_text(json.dumps({"sqlite": {"a/tests/test_x.py": 3}}))
    assert recorded(path, "mariadb") == {"a/tests/test_x.py": 3.0}  # the other database's, until recorded
    path.write_text(json.dumps({"sqlite": {"a/tests/test_x.py": 3}, "mariadb": {"a/tests/test_x.py": 5}}))
    assert recorded(path, "sqlite") == {"a/tests/test_x.py": 3.0}
    assert recorded(path, "mariadb") == {"a/tests/test_x.py": 5.0}


def test_times_are_shipped():
    assert recorded(longest_first.DURATIONS), f"{longest_first.DURATIONS} records no times: record them"


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    slow: starts processes\n    browser: a page\n"
        "addopts = -p cindy_site.testing.longest_first -p no:cacheprovider\n"
    )
    log = tmp_path / "ran.log"
    many = "\n".join(
        f"def test_quick_{i}():\n    open({str(log)!r}, 'a').write('many\\n')\n" for i in range(6)
    )
    (tmp_path / "test_many.py").write_text(many)
    (tmp_path / "test_long.py").write_text(
        f"import pytest\n\n@pytest.mark.slow\ndef test_long():\n    open({str(log)!r}, 'a').write('long\\n')\n"
    )
    return log


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    # Only this plugin and xdist: the project's other plugins (hypothesis, schemathesis, playwright, ...)
    # would double the child's start-up for nothing.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_xdist_hands_out_the_files_in_this_order_not_by_how_many_tests_each_holds(tmp_path):
    pytest.importorskip("xdist")
    log = _project(tmp_path)
    done = _run(tmp_path, "-p", "xdist.plugin", "-n", "1", "--dist", "loadfile")
    assert done.returncode == 0, done.stdout + done.stderr
    # xdist's own sort would hand out the file of six tests first.
    assert log.read_text().split() == ["long"] + ["many"] * 6


def test_a_run_records_each_file_s_seconds_for_its_database_and_a_failed_file_keeps_its_earlier_time(
    tmp_path,
):
    _project(tmp_path)
    out = tmp_path / "durations.json"
    out.write_text(json.dumps({"mariadb": {"kept.py": 9.0}}))
    done = _run(tmp_path, f"--record-durations={out}")
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text())
    assert data["mariadb"] == {"kept.py": 9.0}  # the other database's times are kept
    assert sorted(data["sqlite"]) == ["test_long.py", "test_many.py"]
    assert all(seconds >= 0 for seconds in data["sqlite"].values())

    (tmp_path / "test_broken.py").write_text(
        "import time\n\ndef test_broken():\n    time.sleep(0.3)\n    assert False\n"
    )
    data["sqlite"]["test_broken.py"] = 0.0
    out.write_text(json.dumps(data))
    done = _run(tmp_path, f"--record-durations={out}")
    assert done.returncode == 1
    again = json.loads(out.read_text())
    assert again["sqlite"]["test_broken.py"] == 0.0  # the failed file's earlier time, not this run's
    assert sorted(again["sqlite"]) == ["test_broken.py", "test_long.py", "test_many.py"]

    (tmp_path / "test_new_broken.py").write_text("def test_new_broken():\n    assert False\n")
    done = _run(tmp_path, f"--record-durations={out}")
    assert "test_new_broken.py" in json.loads(out.read_text())["sqlite"]  # no earlier time: this run's
