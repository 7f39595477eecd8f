"""`.ci/run` runs what the README promises, in order: the suite on SQLite, the suite on MariaDB, then the
multi-host placement test alone, with the command its own skip message gives an operator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.any_database

ROOT = Path(__file__).resolve().parents[2]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    return [
        line.removesuffix("</dev/null").strip()
        for line in lines
        if re.match(r"\S*\./test\.sh\b|\w+=\S+ \./test\.sh", line)
    ]


def test_ci_runs_both_suites_then_the_multihost_test_alone():
    commands = ci_commands()
    assert commands[:2] == ["./test.sh", "./test.sh --mariadb"]
    assert len(commands) == 3
    multihost = commands[2]
    assert multihost.startswith("CINDY_TEST_MULTIHOST=1 ./test.sh --mariadb -m multihost ")
    assert multihost.endswith("engine/tests/test_multihost.py")


def test_the_multihost_command_in_ci_is_the_one_operators_are_told():
    told = (ROOT / "engine" / "tests" / "test_multihost.py").read_text()
    command = "CINDY_TEST_MULTIHOST=1 ./test.sh --mariadb -m multihost engine/tests/test_multihost.py"
    assert command in told
    ci = ci_commands()[2]
    assert ci.split() == [*command.split()[:-1], "-rs", command.split()[-1]]
