"""scripts/venv.sh: run.sh and test.sh share .venv and install only what it does not have yet.

Each test runs the real shell function in a directory laid out as a checkout, whose `.venv/bin/python`
is a stand-in that records its arguments instead of running pip: no network, nothing installed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cindy_site.settings import BASE_DIR

pytestmark = pytest.mark.any_database  # the virtualenv script touches no database

FILES = ["requirements.txt", "requirements/test.txt", "requirements/mysql.txt"]


@pytest.fixture
def checkout(tmp_path) -> Path:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((BASE_DIR / name).read_bytes())
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >>{tmp_path / "pip.log"}\n')
    python.chmod(0o755)
    return tmp_path


def _venv(checkout: Path, *files: str) -> list[str]:
    """Run `cindy_venv FILES` as the scripts do; return the installs it made."""
    log = checkout / "pip.log"
    log.unlink(missing_ok=True)
    script = f". {BASE_DIR / 'scripts' / 'venv.sh'}; set -euo pipefail; cindy_venv {' '.join(files)}"
    result = subprocess.run(["bash", "-c", script], cwd=checkout, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    calls = log.read_text().splitlines() if log.exists() else []
    return [call for call in calls if "install" in call and "--upgrade pip" not in call]


def test_switching_between_run_and_test_requirements_installs_nothing_more(checkout):
    assert _venv(checkout, "requirements.txt") == ["-m pip install --quiet --no-input -r requirements.txt"]
    assert len(_venv(checkout, "requirements/test.txt")) == 1  # the test tools are new
    assert _venv(checkout, "requirements.txt") == []
    assert _venv(checkout, "requirements/test.txt") == []
    assert _venv(checkout, "requirements.txt") == []


def test_a_set_not_installed_yet_or_a_changed_file_installs_again(checkout):
    _venv(checkout, "requirements/test.txt")
    assert _venv(checkout, "requirements/test.txt", "requirements/mysql.txt") == [
        "-m pip install --quiet --no-input -r requirements/test.txt -r requirements/mysql.txt"
    ]
    assert _venv(checkout, "requirements/test.txt") == []

    with (checkout / "requirements.txt").open("a") as f:
        f.write("six==1.17.0\n")
    assert _venv(checkout, "requirements.txt") == ["-m pip install --quiet --no-input -r requirements.txt"]
    assert _venv(checkout, "requirements/test.txt", "requirements/mysql.txt") == []
    stamp = (checkout / ".venv" / ".cindy-requirements").read_text().splitlines()
    assert sorted(line.split("  ", 1)[1] for line in stamp) == sorted(FILES)
