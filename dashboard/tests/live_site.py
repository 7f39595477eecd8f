"""A real Cindy for browser tests: the web server, and on demand the gateway and its workers, each
in its own process, sharing a database that the test process also writes to.

pytest-django's SQLite test database lives in memory and cannot be shared with another process, so
the site gets its own database: a temporary SQLite file, or (when the suite runs on MariaDB) a
temporary MariaDB database, each a copy of one database migrated per run (the `site_template`
fixture: the run's `migrated_database`; the copy is engine/tests/processes.py's, as for the process
tests). While a browser test runs, the test process's default connection points at it
(`LiveSite.connected`), so factories and services write where the server reads.
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
from django.test import Client, override_settings
from django_otp import DEVICE_ID_SESSION_KEY

from engine.tests.processes import ChildDatabase

MANAGE = str(Path(settings.BASE_DIR) / "manage.py")
START_TIMEOUT = 60
#: Ports tried before giving up, when another process takes the free port first.
START_ATTEMPTS = 5


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveSite:
    def __init__(self, workdir: Path, *, llm_url: str, template: ChildDatabase) -> None:
        self.workdir = workdir
        self.template = template
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.logs = workdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.processes: dict[str, subprocess.Popen] = {}
        self.database = ChildDatabase(workdir, suffix=f"_site_{secrets.token_hex(3)}")
        self.db_settings = {**connections["default"].settings_dict}
        if self.database.mysql:
            self.db_settings["NAME"] = self.database.name
            database_url = self.database.url
        else:
            self.db_settings["NAME"] = str(self.database.path)
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
            # Wake-ups bring the gateway at once; the idle pass is only the backstop
            # (engine/tests/processes.py, child_settings).
            "CINDY_TICK_SECONDS": "0.2",
            "CINDY_IDLE_PASS_SECONDS": "0.5",
            # A turn starts this long after the message (3 s by default): still a wait, but short.
            "CINDY_READ_DELAY_SECONDS": "0.5",
            "CINDY_Q_WORKERS": "1",
            "PYTHONUNBUFFERED": "1",
            # The web server's "Listening on" line, which `_wait_for_port` waits for, is logged at INFO.
            "LOG_LEVEL": "INFO",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self) -> LiveSite:
        self.database.copy_from(self.template)
        for _attempt in range(START_ATTEMPTS):
            log = self.logs / "web.log"
            start = log.stat().st_size if log.exists() else 0  # the log is kept across attempts
            self._spawn("web", [MANAGE, "runserver", "--noreload", f"127.0.0.1:{self.port}"])
            if self._wait_for_port(start):
                return self
            # Another process took the port between `_free_port` and the server's bind (the suite's
            # processes pick free ports the same way): stop this server and try another port.
            self._stop_process("web")
            self.port = _free_port()
            self.url = f"http://127.0.0.1:{self.port}"
        raise RuntimeError(
            f"the web server found no free port in {START_ATTEMPTS} attempts:\n{self.log('web')}"
        )

    def start_gateway(self) -> None:
        if "gateway" not in self.processes:
            self._spawn("gateway", [MANAGE, "runagents"])

    def stop(self) -> None:
        for name in reversed(list(self.processes)):
            self._stop_process(name)
        self.database.drop()

    def _stop_process(self, name: str) -> None:
        process = self.processes.pop(name)
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def command(self, *args: str) -> str:
        """Run `manage.py ARGS` as a process of its own on the site's database (and Redis, when the
        site has one); return its output once it exited, i.e. once what it wrote is committed."""
        result = subprocess.run(
            [sys.executable, MANAGE, *args], env=self.env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        return result.stdout

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def _spawn(self, name: str, args: list[str]) -> None:
        out = (self.logs / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(
            [sys.executable, *args], env=self.env, stdout=out, stderr=subprocess.STDOUT
        )

    def _wait_for_port(self, start: int) -> bool:
        """Wait until the web server listens on `self.port` (True), or says it could not (False).

        Its own log from byte `start` on decides (what this attempt wrote), not a connection: a
        connection succeeds as well when another process holds the port, and then the browser would
        talk to that process."""
        deadline = time.monotonic() + START_TIMEOUT
        listening = f"Listening on TCP address 127.0.0.1:{self.port}"
        path = self.logs / "web.log"
        while time.monotonic() < deadline:
            exited = self.processes["web"].poll() is not None  # before the log: its last lines are in
            with path.open("rb") as file:
                file.seek(start)
                log = file.read().decode(errors="replace")
            if listening in log:
                return True
            if f"Couldn't listen on 127.0.0.1:{self.port}" in log:
                return False
            if exited:
                raise RuntimeError(f"the web server exited:\n{log[-4000:]}")
            time.sleep(0.1)  # polling the server's log; nothing to wait on instead
        raise RuntimeError(f"the web server did not listen on {self.port}:\n{self.log('web')}")

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

    def session_for(self, device) -> str:
        """The key of a new session of `device`'s user, signed in with a password and then that
        device's one-time code: what the admin's OTP login leaves (written while `connected`)."""
        with override_settings(SECRET_KEY=self.env["SECRET_KEY"]):
            client = Client()
            client.force_login(device.user)
            session = client.session
            session[DEVICE_ID_SESSION_KEY] = device.persistent_id
            session.save()
            return session.session_key
