"""Loaded with `-p` before pytest-django imports settings.

Tests must not depend on the machine they run on: the developer's `.env` is not read, and Cindy's
own variables from the shell are dropped (API keys, models, timeouts...), so every test starts from
the documented defaults. What the test command itself chooses is kept: DATABASE_URL (SQLite or
MariaDB) and the test-only names below. Child processes started by tests inherit this environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

KEPT = {"DATABASE_URL", "CINDY_TEST_DATABASE_NAME", "CINDY_TEST_REDIS_URL"}


def _documented_variables() -> set[str]:
    example = Path(__file__).resolve().parents[2] / ".env.example"
    names = re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", example.read_text(encoding="utf-8"), flags=re.M)
    return set(names)


for name in _documented_variables() - KEPT:
    os.environ.pop(name, None)
os.environ["CINDY_ENV_FILE"] = os.devnull
os.environ["SECRET_KEY"] = "test-only-secret-key"
os.environ["CINDY_SESSION_KEY"] = "test-only-session-key"
# Tests run with DEBUG off, whose defaults redirect to HTTPS; Django's test client speaks plain http.
os.environ["SECURE_SSL_REDIRECT"] = "false"
# Under pytest-xdist each worker gets a Redis database of its own (15, 14, ...), so tests that share
# channel names or pub/sub subjects on different workers never hear each other.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and "CINDY_TEST_REDIS_URL" not in os.environ:
    os.environ["CINDY_TEST_REDIS_URL"] = f"redis://127.0.0.1:6379/{15 - int(_worker[2:]) % 15}"
