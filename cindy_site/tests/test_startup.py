"""Starting Cindy: the settings refuse unsafe production configuration, and .env.example is complete."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cindy_site.settings import BASE_DIR

pytestmark = pytest.mark.slow


def run_manage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    """Run manage.py in a clean environment: no inherited secrets, no .env file, a throwaway SQLite."""
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "CINDY_ENV_FILE": str(tmp_path / "absent.env"),
        "CINDY_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        **env,
    }
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), *args],
        cwd=BASE_DIR,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_startup_refuses_without_secret_key_when_debug_is_off(tmp_path):
    result = run_manage(tmp_path, "check", DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY is not set and DEBUG is off" in result.stderr


def test_startup_refuses_an_empty_secret_key_from_the_env_file(tmp_path):
    env_file = tmp_path / "prod.env"
    env_file.write_text("DEBUG=false\nSECRET_KEY=\n")
    result = run_manage(tmp_path, "check", CINDY_ENV_FILE=str(env_file))
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_startup_proceeds_with_a_secret_key(tmp_path):
    result = run_manage(tmp_path, "check", DEBUG="false", SECRET_KEY="a-real-secret-for-this-test")
    assert result.returncode == 0, result.stderr


def test_development_mode_starts_without_a_secret_key(tmp_path):
    result = run_manage(tmp_path, "check", DEBUG="true")
    assert result.returncode == 0, result.stderr


def test_env_example_loads_cleanly(tmp_path):
    result = run_manage(
        tmp_path, "check", CINDY_ENV_FILE=str(BASE_DIR / ".env.example"), SECRET_KEY="from-the-environment"
    )
    assert result.returncode == 0, result.stderr


def variables_read_by_settings() -> set[str]:
    source = (BASE_DIR / "cindy_site" / "settings.py").read_text()
    read = set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', source))
    read |= set(re.findall(r'_(?:positive_int|int_list)\(\s*"([A-Z][A-Z0-9_]+)"', source))
    return read


def test_env_example_lists_every_variable_the_settings_read():
    read = variables_read_by_settings()
    example = (BASE_DIR / ".env.example").read_text()
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example, flags=re.MULTILINE))
    assert read, "the pattern found no variables in settings.py"
    assert sorted(read - listed) == []


def test_readme_table_lists_every_variable_the_settings_read():
    readme = (BASE_DIR / "README.md").read_text()
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", readme, flags=re.MULTILINE))
    assert sorted(variables_read_by_settings() - rows) == []
