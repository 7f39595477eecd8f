"""Give a staff account its first sign-in device, from the terminal.

    python manage.py createsuperuser
    python manage.py otp_setup USERNAME [--static N] [--telegram-id ID] [--no-totp]

It creates a confirmed TOTP device and prints its otpauth URI and a QR code to scan with an
authenticator app; optionally backup codes and a Telegram device.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dashboard import otp


class Command(BaseCommand):
    help = "Create OTP devices for a staff user: TOTP (QR code + URI), backup codes, a Telegram device."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--static", type=int, default=0, metavar="N", help="also print N backup codes")
        parser.add_argument(
            "--telegram-id",
            type=int,
            default=None,
            metavar="ID",
            help="also add a Telegram device for this user id",
        )
        parser.add_argument("--no-totp", action="store_true", help="skip the authenticator app device")
        parser.add_argument(
            "--no-qr", action="store_true", help="print only the URI, not the terminal QR code"
        )

    def handle(
        self,
        *args,
        username: str,
        static: int,
        telegram_id: int | None,
        no_totp: bool,
        no_qr: bool,
        **options,
    ):
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist:
            raise CommandError(
                f'no user "{username}": create it first with "python manage.py createsuperuser"'
            ) from None
        if not user.is_staff:
            raise CommandError(f'user "{username}" is not staff: the admin will refuse it even with a code')
        if no_totp and not static and telegram_id is None:
            raise CommandError("nothing to do: --no-totp needs --static N or --telegram-id ID")
        if static and not 1 <= static <= 50:
            raise CommandError(f"--static is {static}: choose between 1 and 50")

        if not no_totp:
            device = otp.totp_device_create(user=user, confirmed=True)
            uri = device.config_url
            self.stdout.write(f"Authenticator app device created for {username}.")
            self.stdout.write("Scan this QR code with the app, or type the URI in by hand:\n")
            if not no_qr:
                self.stdout.write(otp.qr_terminal(uri))
            self.stdout.write(uri + "\n")
        if static:
            codes = otp.static_codes_replace(user=user, count=static)
            self.stdout.write("Backup codes (each works once; store them safely):")
            for code in codes:
                self.stdout.write(f"  {code}")
        if telegram_id is not None:
            try:
                otp.telegram_device_create(user=user, telegram_user_id=telegram_id, confirmed=True)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(
                f"Telegram device created: codes go to Telegram user {telegram_id} through CINDY_OTP_AGENT."
            )
        self.stdout.write(self.style.SUCCESS("Done. Sign in at /admin/ with your password and a code."))
