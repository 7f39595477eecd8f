"""Staff OTP devices: creating them (bootstrap command and enrollment pages) and rendering QR codes."""

from __future__ import annotations

import io

import segno
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models.otp_device import TelegramDevice

BACKUP_DEVICE_NAME = "Backup codes"


def totp_device_create(
    *, user: AbstractBaseUser, name: str = "Authenticator app", confirmed: bool
) -> TOTPDevice:
    """A new TOTP device with a random key. Unconfirmed devices cannot be used to sign in."""
    return TOTPDevice.objects.create(user=user, name=name, confirmed=confirmed)


@transaction.atomic
def static_codes_replace(*, user: AbstractBaseUser, count: int = 10) -> list[str]:
    """Replace the user's backup codes with `count` new single-use ones and return them (shown once)."""
    if not 1 <= count <= 50:
        raise ValueError(f"backup code count is {count}: choose between 1 and 50")
    StaticDevice.objects.filter(user=user, name=BACKUP_DEVICE_NAME).delete()
    device = StaticDevice.objects.create(user=user, name=BACKUP_DEVICE_NAME, confirmed=True)
    codes = [StaticToken.random_token() for _ in range(count)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=code) for code in codes])
    return codes


def telegram_device_create(
    *, user: AbstractBaseUser, telegram_user_id: int, confirmed: bool, name: str = "Telegram"
) -> TelegramDevice:
    if telegram_user_id <= 0:
        raise ValueError(f"Telegram user id is {telegram_user_id}: it must be a positive number")
    return TelegramDevice.objects.create(
        user=user, name=name, telegram_user_id=telegram_user_id, confirmed=confirmed
    )


def qr_svg(data: str) -> str:
    """An inline SVG QR code (for the enrollment page)."""
    return segno.make(data, error="m").svg_inline(scale=5, dark="#000", light="#fff")


def qr_terminal(data: str) -> str:
    """A QR code drawn with block characters, for a terminal."""
    out = io.StringIO()
    segno.make(data, error="m").terminal(out=out, compact=True, border=2)
    return out.getvalue()
