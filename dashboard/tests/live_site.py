"""A real Cindy for browser tests: the web server, and on demand the gateway and its workers, each
in its own process, sharing a database that the test process also writes to.

pytest-django's SQLite test database lives in memory and cannot be shared with another process, so
the site gets its own database: a temporary SQLite file, or (when the suite runs on MariaDB) a
temporary MariaDB database. `manage.py migrate` prepares it; while a browser test runs, the test
process's default connection points at it (`LiveSite.connected`), so factories and services write
where the server reads.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import connections

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
START_TIMEOUT = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveSite:
    def __init__(self, workdir: Path, *, llm_url: str) -> None:
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, subprocess.Popen] = {}
        base = connections["default"].settings_dict
        self.vendor = connections["default"].vendor
        self.db_settings = {**base}
        if self.vendor == "mysql":
            self.db_settings["NAME"] = f"cindy_browser_{os.getpid()}_{secrets.token_hex(3)}"
            auth = base["USER"] + (f":{base['PASSWORD']}" if base.get("PASSWORD") else "")
            database_url = f"mysql://{auth}@{base['HOST'] or '127.0.0.1'}:{base['PORT'] or 3306}/{self.db_settings['NAME']}"
        else:
            self.db_settings["NAME"] = str(workdir / "cindy.sqlite3")
            database_url = ""
        self.env = {
            **os.environ,
            "DEBUG": "true",
            "SECRET_KEY": "browser-test-secret-key",
            "CINDY_SESSION_KEY": "browser-test-session-key",
            "CINDY_ENV_FILE": os.devnull,
            "DATABASE_URL": database_url,
            "CINDY_SQLITE_PATH": str(workdir / "cindy.sqlite3"),
            "CINDY_MEDIA_ROOT": str(workdir / "media"),
            "GEMINI_BASE_URL": llm_url,
            "GOOGLE_GEMINI_API_KEY": "test",
            "DEFAULT_AGENT_LLM": "gemini",
            "CINDY_TICK_SECONDS": "0.1",
            "CINDY_Q_WORKERS": "1",
            "PYTHONUNBUFFERED": "1",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> LiveSite:
        if self.vendor == "mysql":
            self._mysql(
                f"CREATE DATABASE `{self.db_settings['NAME']}` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
            )
        subprocess.run(
            [sys.executable, MANAGE, "migrate", "--noinput"],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=300,
        )
        self._spawn("web", [MANAGE, "runserver", "--noreload", f"127.0.0.1:{self.port}"])
        self._wait_for_port()
        return self

    def start_gateway(self) -> None:
        if "gateway" not in self.processes:
            self._spawn("gateway", [MANAGE, "runagents"])

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            process = self.processes.pop(name)
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        if self.vendor == "mysql":
            self._mysql(f"DROP DATABASE IF EXISTS `{self.db_settings['NAME']}`")

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _spawn(self, name: str, args: list[str]) -> None:
        out = (self.logs / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, *args], env=self.env, stdout=out, stderr=subprocess.STDOUT
        )

    def _wait_for_port(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.processes["web"].poll() is not None:
                raise RuntimeError(f"the web server exited:\n{self.log('web')}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return
            time.sleep(0.1)  # polling a port that is not open yet; nothing to wait on instead
        raise RuntimeError(f"the web server did not listen on {self.port}:\n{self.log('web')}")

    def _mysql(self, statement: str) -> None:
        import MySQLdb

        base = connections["default"].settings_dict
        conn = MySQLdb.connect(
            host=base["HOST"] or "127.0.0.1",
            port=int(base["PORT"] or 3306),
            user=base["USER"],
            passwd=base.get("PASSWORD") or "",
        )
        try:
            conn.cursor().execute(statement)
        finally:
            conn.close()

    # --- the test process's view of the site's database --------------------------------------------

    @contextlib.contextmanager
    def connected(self) -> Iterator[None]:
        """Point this thread's default connection at the site's database for the duration."""
        previous = connections["default"]
        wrapper = previous.__class__(dict(self.db_settings), alias="default")
        connections["default"] = wrapper
        ContentType.objects.clear_cache()
        try:
            yield
        finally:
            wrapper.close()
            connections["default"] = previous
            ContentType.objects.clear_cache()
