"""Product files stay small enough to read in one sitting: under MAX_LINES lines each (tests,
migrations, bench, scripts and test support are not product code: `product_files` says which are)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cindy_site.testing.private_api import product_files

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 600

pytestmark = pytest.mark.any_database  # reads source files only


def long_files(root: Path) -> list[str]:
    found = []
    for path in product_files(root):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines >= MAX_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_every_product_file_is_under_the_line_limit():
    found = long_files(ROOT)
    assert not found, (
        f"product files of {MAX_LINES} lines or more (split each by what its parts do):\n" + "\n".join(found)
    )


def test_a_long_product_file_is_reported_and_tests_are_not(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "tests").mkdir()
    (tmp_path / "app" / "long.py").write_text("x = 1\n" * MAX_LINES)
    (tmp_path / "app" / "short.py").write_text("x = 1\n" * (MAX_LINES - 1))
    (tmp_path / "app" / "tests" / "test_long.py").write_text("x = 1\n" * (MAX_LINES * 2))
    assert long_files(tmp_path) == [f"app/long.py: {MAX_LINES} lines"]
