"""Run the loopback Telegram stand-in, so an agent can run on the telegram transport with no account.

    python manage.py telegram_standin [--port 8443] [--control-port 8444] [--key-dir var/telegram-standin]

It prints the settings that point Cindy at it. Its RSA key is kept in --key-dir (made on first start),
so sessions stay valid across restarts of the stand-in; its chats live in memory only.
Phone numbers follow Telegram's test convention +99966XYYYY, whose login code is X five times.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from cindy_site.testing.mtproto import ServerKey, StandIn
from cindy_site.testing.mtproto.control import serve_control


class Command(BaseCommand):
    help = "Run a loopback MTProto server that stands in for Telegram (test numbers +99966XYYYY)."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8443, help="MTProto port on 127.0.0.1")
        parser.add_argument("--control-port", type=int, default=8444, help="HTTP control port on 127.0.0.1")
        parser.add_argument(
            "--key-dir",
            default=str(Path(settings.BASE_DIR) / "var" / "telegram-standin"),
            help="Where the stand-in's RSA key is kept",
        )

    def handle(self, *args, port: int, control_port: int, key_dir: str, **options):
        key_path = Path(key_dir) / "server_key.pem"
        public_path = Path(key_dir) / "server_key.pub.pem"
        try:
            key = ServerKey.load_or_create(key_path)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        public_path.write_bytes(key.public_pem)
        standin = StandIn(port=port, key=key)
        try:
            asyncio.run(self._run(standin, control_port, public_path))
        except KeyboardInterrupt:
            pass

    async def _run(self, standin: StandIn, control_port: int, public_path: Path) -> None:
        try:
            await standin.listen()
        except OSError as exc:
            raise CommandError(
                f"cannot listen on 127.0.0.1:{standin.port}: {exc.strerror}; pick --port"
            ) from None
        try:
            control = serve_control(standin, port=control_port)
        except OSError as exc:
            raise CommandError(
                f"cannot listen on 127.0.0.1:{control_port}: {exc.strerror}; pick --control-port"
            ) from None
        self.stdout.write(
            f"Telegram stand-in on {standin.address}, control on http://127.0.0.1:{control.server_address[1]}"
        )
        self.stdout.write("Point Cindy at it (in .env):")
        self.stdout.write(f"  CINDY_TELEGRAM_SERVER={standin.address}")
        self.stdout.write(f"  CINDY_TELEGRAM_SERVER_KEY={public_path}")
        self.stdout.write("  TELEGRAM_API_ID=1")
        self.stdout.write("  TELEGRAM_API_HASH=standin")
        self.stdout.write(
            "Log in with a number +99966XYYYY (code: X five times), e.g. +9996621234, code 22222."
        )
        self.stdout.flush()
        await asyncio.Event().wait()
