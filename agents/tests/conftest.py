from __future__ import annotations

import pytest


@pytest.fixture
def media_root(settings, tmp_path):
    """Imports store media files under a temporary MEDIA_ROOT and default to the sandbox transport."""
    settings.MEDIA_ROOT = tmp_path / "storage"
    settings.TELEGRAM_API_ID = ""
    settings.TELEGRAM_API_HASH = ""
    return settings.MEDIA_ROOT
