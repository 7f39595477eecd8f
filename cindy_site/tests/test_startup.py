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
        "CINDY_ENV_FILE": os.devnull,
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


def test_a_missing_secret_key_is_one_line_naming_it_and_the_fix(tmp_path):
    result = run_manage(tmp_path, "check", DEBUG="false")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: SECRET_KEY is not set and DEBUG is off: set SECRET_KEY in the environment or in .env "
        '(for example: python -c "import secrets; print(secrets.token_urlsafe(50))")'
    ]


@pytest.mark.parametrize("module", ["cindy_site.asgi", "cindy_site.wsgi"])
def test_the_web_entry_points_say_a_missing_secret_key_in_one_line(tmp_path, module):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "CINDY_ENV_FILE": os.devnull,
        "CINDY_SQLITE_PATH": str(tmp_path / "db.sqlite3"),
        "DEBUG": "false",
    }
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: SECRET_KEY is not set and DEBUG is off: set SECRET_KEY")


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


def test_a_mistyped_env_file_stops_startup_and_names_the_path(tmp_path):
    missing = tmp_path / "prod.evn"
    result = run_manage(tmp_path, "check", CINDY_ENV_FILE=str(missing), DEBUG="true")
    assert result.returncode != 0
    assert f"CINDY_ENV_FILE is '{missing}', but there is no such file" in result.stderr
    assert "fix the path, or unset CINDY_ENV_FILE" in result.stderr


def test_without_cindy_env_file_an_absent_default_env_is_fine(tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "DEBUG": "true", "CINDY_SQLITE_PATH": str(tmp_path / "db")}
    code = "import cindy_site.settings as s; print(s.DEBUG)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(BASE_DIR)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "k9V2-production-like-secret-key-with-enough-length-and-variety-8xQ!z",
    "ALLOWED_HOSTS": "cindy.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://cindy.example.com",
}


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    result = run_manage(
        tmp_path,
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        **PRODUCTION,
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_defaults_are_secure_and_each_can_be_overridden(tmp_path):
    code = (
        "from django.conf import settings as s;"
        "print(s.SECURE_PROXY_SSL_HEADER, s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS,"
        " s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)"
    )
    secure = run_manage(tmp_path, "shell", "-c", code, **PRODUCTION)
    assert (
        secure.stdout.strip().splitlines()[-1]
        == "('HTTP_X_FORWARDED_PROTO', 'https') True 31536000 True True"
    )
    relaxed = run_manage(
        tmp_path,
        "shell",
        "-c",
        code,
        **PRODUCTION,
        SECURE_PROXY_SSL_HEADER="",
        SECURE_SSL_REDIRECT="false",
        SECURE_HSTS_SECONDS="0",
        SESSION_COOKIE_SECURE="false",
        CSRF_COOKIE_SECURE="false",
    )
    assert relaxed.stdout.strip().splitlines()[-1] == "None False 0 False False"
    development = run_manage(tmp_path, "shell", "-c", code, DEBUG="true")
    assert development.stdout.strip().splitlines()[-1] == "None False 0 False False"


def test_each_log_line_is_printed_once_with_its_timestamp(tmp_path):
    """Server and request lines go through Django's loggers; they reach stderr once, formatted."""
    code = (
        "import logging;"
        "logging.getLogger('django.channels.server').info('HTTP GET /probe 200');"
        "logging.getLogger('django.request').warning('Not Found: /probe');"
        "logging.getLogger('django.server').info('served /probe');"
        "logging.getLogger('engine.gateway').info('gateway probe')"
    )
    result = run_manage(tmp_path, "shell", "-c", code, DEBUG="true")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "probe" in line]
    assert len(lines) == 4, result.stderr
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (INFO|WARNING) ", line) for line in lines), lines


def test_only_runserver_loads_daphnes_app(tmp_path):
    """daphne's app (Twisted, pyOpenSSL: about 0.35 s of CPU per start) is there for its `runserver`
    alone; an operator's other commands start without it."""
    probe = "import sys; print('daphne.server' in sys.modules, 'twisted' in sys.modules)"
    shell = run_manage(tmp_path, "shell", "--no-imports", "-c", probe, DEBUG="true")
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.split() == ["False", "False"], shell.stdout
    runserver = run_manage(tmp_path, "runserver", "--help", DEBUG="true")
    assert runserver.returncode == 0, runserver.stderr
    # daphne's runserver, not staticfiles': it serves the dashboard's WebSockets in development.
    assert "--websocket_handshake_timeout" in runserver.stdout


def test_sigusr1_writes_every_threads_stack_and_the_process_goes_on(tmp_path):
    import faulthandler
    import signal
    import threading

    from cindy_site.startup import STACKS_SIGNAL, dump_stacks_on_signal

    previous = signal.getsignal(STACKS_SIGNAL)
    waiting = threading.Event()
    helper = threading.Thread(target=waiting.wait, name="a waiting helper", daemon=True)
    helper.start()
    with (tmp_path / "stacks.txt").open("w+") as out:
        dump_stacks_on_signal(out)
        try:
            os.kill(os.getpid(), STACKS_SIGNAL)  # handled in C before os.kill returns
        finally:
            faulthandler.unregister(STACKS_SIGNAL)
            waiting.set()
        out.seek(0)
        stacks = out.read()
    assert stacks.count("(most recent call first):") >= 2  # this thread and the helper at least
    assert "test_startup.py" in stacks and "threading.py" in stacks
    assert signal.getsignal(STACKS_SIGNAL) == previous


def test_a_server_that_handles_sigusr1_itself_keeps_its_handler(tmp_path):
    import signal

    from cindy_site.startup import STACKS_SIGNAL, dump_stacks_on_signal

    seen: list[int] = []
    previous = signal.signal(STACKS_SIGNAL, lambda signum, frame: seen.append(signum))
    try:
        dump_stacks_on_signal((tmp_path / "stacks.txt").open("w"))
        os.kill(os.getpid(), STACKS_SIGNAL)
        assert seen == [STACKS_SIGNAL]  # gunicorn's log reopening, say, still happens
        assert (tmp_path / "stacks.txt").read_text() == ""
    finally:
        signal.signal(STACKS_SIGNAL, previous)
