from __future__ import annotations

import os

from django.core.checks import Error

from cindy_site.checks import check_q_cluster


def test_q_cluster_retry_must_exceed_timeout(settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300, "retry": 300}
    errors = check_q_cluster(None)
    assert [e.id for e in errors] == ["cindy.E001"]
    assert isinstance(errors[0], Error)
    assert "300" in errors[0].msg


def test_default_q_cluster_passes_its_check():
    assert check_q_cluster(None) == []


def test_sqlite_runs_in_wal_mode_with_immediate_transactions_and_a_busy_timeout():
    """Checked on a real file database, as web, gateway and workers share one."""
    import subprocess
    import sys
    import tempfile

    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='cindy_site.settings'; django.setup();"
        "from django.db import connection as c; cur=c.cursor();"
        "cur.execute('pragma journal_mode'); print(cur.fetchone()[0]);"
        "cur.execute('pragma busy_timeout'); print(cur.fetchone()[0]);"
        "print(c.settings_dict['OPTIONS']['transaction_mode'])"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(CINDY_SQLITE_PATH=f"{tmp}/cindy.sqlite3", CINDY_SQLITE_BUSY_TIMEOUT="7")
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
    assert out == ["wal", "7000", "IMMEDIATE"]


def test_a_bad_operator_id_list_names_the_variable_and_the_fix():
    import subprocess
    import sys

    env = {**os.environ, "CINDY_OPERATOR_IDS": "123,alice"}
    result = subprocess.run(
        [sys.executable, "-c", "import cindy_site.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "CINDY_OPERATOR_IDS is '123,alice': use comma-separated Telegram user ids" in result.stderr


def test_a_bad_installation_spend_cap_names_the_variable_and_the_fix():
    import subprocess
    import sys

    env = {**os.environ, "CINDY_DAILY_SPEND_CAP_USD": "ten dollars"}
    result = subprocess.run(
        [sys.executable, "-c", "import cindy_site.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert (
        "CINDY_DAILY_SPEND_CAP_USD is 'ten dollars': write an amount of US dollars, e.g. 20 or 7.50"
        in result.stderr
    )
