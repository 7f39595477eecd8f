"""Signing in to the admin: a password, then a one-time code from a registered device."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django_otp.admin import OTPAdminSite

from agents.models import Agent, GatewayRequest
from agents.models.otp_device import TelegramDevice
from cindy_site.testing.staff import STAFF_PASSWORD, totp_now
from dashboard import otp

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/?next=/admin/"


def login(client, **fields):
    return client.post(
        LOGIN, {"username": "operator", "password": STAFF_PASSWORD, "next": "/admin/", **fields}
    )


def test_the_admin_site_is_the_otp_site():
    assert isinstance(admin.site, OTPAdminSite)


def test_password_alone_does_not_open_the_admin(client, staff_user, staff_totp):
    response = login(client)
    assert response.status_code == 200
    assert "otp_device" in response.content.decode()  # the form now offers the user's devices
    assert client.get("/admin/").status_code == 302


def test_a_logged_in_user_without_otp_verification_is_sent_to_login(client, staff_user, staff_totp):
    client.force_login(staff_user)
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_password_and_totp_code_open_the_admin(client, staff_user, staff_totp):
    response = login(client, otp_device=staff_totp.persistent_id, otp_token=totp_now(staff_totp))
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_wrong_totp_code_is_refused(client, staff_user, staff_totp):
    good = totp_now(staff_totp)
    wrong = f"{(int(good) + 500000) % 1000000:06d}"
    response = login(client, otp_device=staff_totp.persistent_id, otp_token=wrong)
    assert response.status_code == 200
    assert client.get("/admin/").status_code == 302


def test_a_wrong_password_is_refused_even_with_a_good_code(client, staff_user, staff_totp):
    response = client.post(
        LOGIN,
        {
            "username": "operator",
            "password": "nope",
            "otp_device": staff_totp.persistent_id,
            "otp_token": totp_now(staff_totp),
        },
    )
    assert response.status_code == 200
    assert client.get("/admin/").status_code == 302


def test_a_static_backup_code_works_once(client, staff_user):
    codes = otp.static_codes_replace(user=staff_user, count=3)
    device = staff_user.staticdevice_set.get()

    assert login(client, otp_device=device.persistent_id, otp_token=codes[0]).status_code == 302
    client.logout()
    assert login(client, otp_device=device.persistent_id, otp_token=codes[0]).status_code == 200
    assert device.token_set.count() == 2


def test_a_telegram_code_opens_the_admin(client, clock, settings, staff_user):
    settings.CINDY_OTP_AGENT = "Olive"
    Agent.objects.create(name="Olive", phone="+15550001", instructions="Sends codes.")
    device = TelegramDevice.objects.create(user=staff_user, name="Telegram", telegram_user_id=777)

    response = login(client, otp_device=device.persistent_id, otp_challenge="1")
    assert response.status_code == 200
    assert "sent" in response.content.decode()
    request_row = GatewayRequest.objects.get(kind=GatewayRequest.Kind.SEND_OTP)
    code = re.search(r"\b(\d{6})\b", request_row.params["text"]).group(1)

    response = login(client, otp_device=device.persistent_id, otp_token=code)
    assert response.status_code == 302
    assert client.get("/admin/").status_code == 200


def test_a_device_of_another_user_cannot_be_used(client, django_user_model, staff_user):
    other = django_user_model.objects.create_superuser("other", "o@example.com", "x" * 20)
    other_device = otp.totp_device_create(user=other, confirmed=True)
    response = login(client, otp_device=other_device.persistent_id, otp_token=totp_now(other_device))
    assert response.status_code == 200
    assert client.get("/admin/").status_code == 302
