"""Loaded with `-p` before pytest-django imports settings: test-only secrets, never used elsewhere."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key")
os.environ.setdefault("CINDY_SESSION_KEY", "test-only-session-key")
