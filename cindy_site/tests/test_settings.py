from __future__ import annotations

from django.conf import settings
from django.core.checks import Error
from django.db import connection

from cindy_site.checks import check_q_cluster


def test_q_cluster_retry_must_exceed_timeout(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300, "retry": 300}
    errors = check_q_cluster(None)
    assert [e.id for e in errors] == ["cindy.E001"]
    assert isinstance(errors[0], Error)
    assert "300" in errors[0].msg


def test_default_q_cluster_passes_its_check():
    assert check_q_cluster(None) == []


def test_sqlite_runs_in_wal_mode_with_immediate_transactions(db):
    if connection.vendor != "sqlite":
        return
    assert settings.DATABASES["default"]["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
