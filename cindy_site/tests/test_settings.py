from __future__ import annotations

import os
import subprocess
import sys

import pytest
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


_READ_SQLITE_SETTINGS = """
import os, sqlite3, django
os.environ["DJANGO_SETTINGS_MODULE"] = "cindy_site.settings"
django.setup()
from django.db import connection, transaction
cursor = connection.cursor()
for pragma in ("journal_mode", "busy_timeout", "synchronous", "foreign_keys"):
    cursor.execute(f"pragma {pragma}")
    print(cursor.fetchone()[0])
print(connection.settings_dict["NAME"])
# IMMEDIATE: an atomic block holds the write lock from its start, before it writes anything, so
# another writer is refused at its own BEGIN instead of failing later on a lock upgrade.
with transaction.atomic():
    cursor.execute("select 1")
    other = sqlite3.connect(connection.settings_dict["NAME"], timeout=0)
    try:
        other.execute("begin immediate")
        print("other writer began")
    except sqlite3.OperationalError as error:
        print(str(error).replace(" ", "-"))
"""


@pytest.mark.parametrize("named_by", ["CINDY_SQLITE_PATH", "DATABASE_URL"])
def test_sqlite_runs_in_wal_mode_with_immediate_transactions_and_a_busy_timeout_however_it_is_named(
    named_by, tmp_path
):
    """Read back from a real file database, as web, gateway and workers share one: a `sqlite:///`
    URL gets the same safety settings as CINDY_SQLITE_PATH."""
    path = tmp_path / "cindy.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CINDY_SQLITE_PATH")}
    env["CINDY_SQLITE_BUSY_TIMEOUT"] = "7"
    if named_by == "DATABASE_URL":
        env["DATABASE_URL"] = f"sqlite:///{path}"
        env["CINDY_SQLITE_PATH"] = str(tmp_path / "not-this-one.sqlite3")
    else:
        env["CINDY_SQLITE_PATH"] = str(path)

    out = subprocess.run(
        [sys.executable, "-c", _READ_SQLITE_SETTINGS], env=env, capture_output=True, text=True, check=True
    ).stdout.split()

    assert out == ["wal", "7000", "1", "1", str(path), "database-is-locked"]
    assert not (tmp_path / "not-this-one.sqlite3").exists()


def test_a_bad_operator_id_list_names_the_variable_and_the_fix():
    env = {**os.environ, "CINDY_OPERATOR_IDS": "123,alice"}
    result = subprocess.run(
        [sys.executable, "-c", "import cindy_site.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "CINDY_OPERATOR_IDS is '123,alice': use comma-separated Telegram user ids" in result.stderr


def test_a_bad_installation_spend_cap_names_the_variable_and_the_fix():
    env = {**os.environ, "CINDY_DAILY_SPEND_CAP_USD": "ten dollars"}
    result = subprocess.run(
        [sys.executable, "-c", "import cindy_site.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert (
        "CINDY_DAILY_SPEND_CAP_USD is 'ten dollars': write an amount of US dollars, e.g. 20 or 7.50"
        in result.stderr
    )


@pytest.mark.parametrize("share", ["0", "1.5", "-0.2"])
def test_a_recall_share_out_of_range_names_the_variable_and_the_fix(share):
    env = {**os.environ, "CINDY_RECALL_AUTO_MIN_SHARE": share}
    result = subprocess.run(
        [sys.executable, "-c", "import cindy_site.settings"], env=env, capture_output=True, text=True
    )
    assert result.returncode != 0
    assert (
        f"CINDY_RECALL_AUTO_MIN_SHARE is {float(share)}: it must be a share above 0 and at most 1"
        in result.stderr
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("fast", "CINDY_DIALOG_READS_PER_SECOND is 'fast': it must be a number, e.g. 5.0"),
        ("-2", "CINDY_DIALOG_READS_PER_SECOND is -2.0: it must be 5.0 or another number of 0 or more"),
    ],
)
def test_a_bad_number_in_the_environment_is_refused_naming_the_variable(monkeypatch, value, message):
    from django.core.exceptions import ImproperlyConfigured

    from cindy_site.setting_values import non_negative_float

    monkeypatch.setenv("CINDY_DIALOG_READS_PER_SECOND", value)
    with pytest.raises(ImproperlyConfigured, match="^" + message.replace("(", r"\(").replace(".", r"\.")):
        non_negative_float("CINDY_DIALOG_READS_PER_SECOND", 5.0, zero="never stretched")


def test_a_whole_number_setting_refuses_a_fraction_naming_the_variable(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from cindy_site.setting_values import positive_int

    monkeypatch.setenv("CINDY_UPKEEP_CONCURRENCY", "2.5")
    with pytest.raises(
        ImproperlyConfigured, match="CINDY_UPKEEP_CONCURRENCY is '2.5': it must be a whole number"
    ):
        positive_int("CINDY_UPKEEP_CONCURRENCY", 8)
    monkeypatch.setenv("CINDY_UPKEEP_CONCURRENCY", "12")
    assert positive_int("CINDY_UPKEEP_CONCURRENCY", 8) == 12
