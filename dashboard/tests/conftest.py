"""The dashboard's cast: OTP-verified staff, half-signed-in staff, a non-staff user, a sandbox agent."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


@dataclass
class Visitor:
    client: Client
    session_key: str


def _visitor(user, device: TOTPDevice | None) -> Visitor:
    client = Client()
    client.force_login(user)
    if device is not None:
        session = client.session
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session.save()
    return Visitor(client=client, session_key=client.session.session_key)


def make_user(username: str, *, staff: bool = True):
    return get_user_model().objects.create_user(
        username=username, password="correct horse battery staple", is_staff=staff
    )


@pytest.fixture
def staff(db):
    return make_user("operator")


@pytest.fixture
def staff_device(staff) -> TOTPDevice:
    return TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)


@pytest.fixture
def verified(staff, staff_device) -> Visitor:
    """Staff who signed in with a password and a TOTP code."""
    return _visitor(staff, staff_device)


@pytest.fixture
def unverified(staff, staff_device) -> Visitor:
    """Staff who signed in with a password but not yet with a one-time code."""
    return _visitor(staff, None)


@pytest.fixture
def non_staff(db) -> Visitor:
    user = make_user("visitor", staff=False)
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    return _visitor(user, device)


@pytest.fixture
def foreign_device_visitor(staff, db) -> Visitor:
    """Staff whose session names a device that belongs to somebody else."""
    other = make_user("someone-else")
    device = TOTPDevice.objects.create(user=other, name="phone", confirmed=True)
    return _visitor(staff, device)


@pytest.fixture
def sandbox_agent(db) -> Agent:
    return Agent.objects.create(
        name="Wendy", phone="+15550000001", instructions="You are Wendy.", transport="sandbox"
    )


@pytest.fixture
def hostile_agent(db) -> Agent:
    return Agent.objects.create(
        name=f"Eve {HOSTILE}", phone="+15550000009", instructions="x", transport="sandbox"
    )
