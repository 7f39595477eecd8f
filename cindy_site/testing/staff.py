"""Staff accounts for tests: a superuser with a TOTP device, and a client already past the OTP step."""

from __future__ import annotations

import pytest
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

STAFF_PASSWORD = "correct horse battery staple"


def totp_now(device: TOTPDevice) -> str:
    """The code an authenticator app would show for `device` right now."""
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    return f"{totp.token():0{device.digits}d}"


def verify_client(client, device) -> None:
    """Mark the client's session as verified by `device` (what a successful OTP login does)."""
    session = client.session
    session[DEVICE_ID_SESSION_KEY] = device.persistent_id
    session.save()


@pytest.fixture
def staff_user(django_user_model):
    return django_user_model.objects.create_superuser("operator", "operator@example.com", STAFF_PASSWORD)


@pytest.fixture
def staff_totp(staff_user):
    return TOTPDevice.objects.create(user=staff_user, name="phone", confirmed=True)


@pytest.fixture
def verified_client(client, staff_user, staff_totp):
    """A Django test client logged in as a superuser whose session passed the OTP step."""
    client.force_login(staff_user)
    verify_client(client, staff_totp)
    return client
