"""`manage.py telegram_standin` as a process: the settings it prints, its key file, its control port."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_command_prints_the_settings_that_point_cindy_at_it_and_keeps_its_key(tmp_path):
    port, control = free_port(), free_port()
    env = {**os.environ, "CINDY_ENV_FILE": os.devnull, "SECRET_KEY": "test-only"}
    env["CINDY_SQLITE_PATH"] = str(tmp_path / "unused.sqlite3")
    args = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "telegram_standin"]
    args += ["--port", str(port), "--control-port", str(control), "--key-dir", str(tmp_path / "keys")]
    process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(5)]  # blocks until the stand-in listens
        assert f"  CINDY_TELEGRAM_SERVER=127.0.0.1:{port}\n" in lines
        key_line = next(line for line in lines if "CINDY_TELEGRAM_SERVER_KEY=" in line)
        public = Path(key_line.split("=", 1)[1].strip())
        assert public.read_text().startswith("-----BEGIN RSA PUBLIC KEY-----")
        request = urllib.request.Request(
            f"http://127.0.0.1:{control}/users",
            data=json.dumps({"first_name": "Bob"}).encode(),
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert json.loads(response.read())["phone"].startswith("+99966")
    finally:
        process.kill()
        process.wait(timeout=10)
    assert (tmp_path / "keys" / "server_key.pem").exists()
