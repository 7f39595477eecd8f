"""Adding sign-in devices from the admin, and bootstrapping the first one from the terminal."""

from __future__ import annotations

import re

import pytest
from django.core.management import CommandError, call_command
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent, GatewayRequest
from agents.models.otp_device import TelegramDevice
from cindy_site.testing.staff import totp_now

pytestmark = pytest.mark.django_db


CREATE = {"action": "create"}


def test_a_get_of_the_enrollment_page_creates_no_device(verified_client, staff_user):
    response = verified_client.get("/admin/otp/totp/")

    assert response.status_code == 200
    assert "Create a key" in response.content.decode()
    assert not TOTPDevice.objects.filter(user=staff_user, confirmed=False).exists()


def test_enrollment_page_shows_a_qr_code_and_the_otpauth_uri(verified_client, staff_user):
    assert verified_client.post("/admin/otp/totp/", CREATE).status_code == 302
    response = verified_client.get("/admin/otp/totp/")
    body = response.content.decode()

    assert response.status_code == 200
    assert "<svg" in body
    assert "otpauth://totp/Cindy%3Aoperator?secret=" in body
    pending = TOTPDevice.objects.get(user=staff_user, confirmed=False)
    assert pending.config_url.replace("&", "&amp;") in body


def test_enrollment_reuses_the_pending_device_on_reload(verified_client, staff_user):
    verified_client.post("/admin/otp/totp/", CREATE)
    verified_client.post("/admin/otp/totp/", CREATE)
    verified_client.get("/admin/otp/totp/")
    assert TOTPDevice.objects.filter(user=staff_user, confirmed=False).count() == 1


def test_a_code_without_a_pending_device_creates_none(verified_client, staff_user):
    response = verified_client.post("/admin/otp/totp/", {"token": "123456"})

    assert response.status_code == 200
    assert not TOTPDevice.objects.filter(user=staff_user, confirmed=False).exists()


def test_enrollment_confirms_the_device_with_its_first_code(verified_client, staff_user):
    verified_client.post("/admin/otp/totp/", CREATE)
    pending = TOTPDevice.objects.get(user=staff_user, confirmed=False)

    response = verified_client.post("/admin/otp/totp/", {"token": totp_now(pending)})

    assert response.status_code == 302
    pending.refresh_from_db()
    assert pending.confirmed is True


def test_enrollment_keeps_the_device_unconfirmed_after_a_wrong_code(verified_client, staff_user):
    verified_client.post("/admin/otp/totp/", CREATE)
    pending = TOTPDevice.objects.get(user=staff_user, confirmed=False)
    wrong = f"{(int(totp_now(pending)) + 500000) % 1000000:06d}"

    response = verified_client.post("/admin/otp/totp/", {"token": wrong})

    assert response.status_code == 200
    assert "does not match" in response.content.decode()
    pending.refresh_from_db()
    assert pending.confirmed is False


def test_enrollment_needs_an_otp_verified_session(client, staff_user, staff_totp):
    client.force_login(staff_user)
    response = client.post("/admin/otp/totp/", {"action": "create"})
    assert response.status_code == 302
    assert not TOTPDevice.objects.filter(confirmed=False).exists()


def test_backup_codes_page_replaces_the_old_codes(verified_client, staff_user):
    verified_client.post("/admin/otp/static/", {"count": 4})
    response = verified_client.post("/admin/otp/static/", {"count": 5})

    device = StaticDevice.objects.get(user=staff_user)
    codes = list(device.token_set.values_list("token", flat=True))
    assert len(codes) == 5
    assert all(code in response.content.decode() for code in codes)


def test_telegram_enrollment_sends_a_code_and_confirms_with_it(verified_client, clock, settings, staff_user):
    settings.CINDY_OTP_AGENT = "Olive"
    Agent.objects.create(name="Olive", phone="+15550001", instructions="Sends codes.")

    response = verified_client.post("/admin/otp/telegram/", {"telegram_user_id": 9001})
    assert response.status_code == 302
    request_row = GatewayRequest.objects.get()
    assert request_row.params["user_id"] == 9001
    code = re.search(r"\b(\d{6})\b", request_row.params["text"]).group(1)

    response = verified_client.post("/admin/otp/telegram/", {"token": code})

    assert response.status_code == 302
    assert TelegramDevice.objects.get(user=staff_user).confirmed is True


def test_devices_page_lists_the_users_devices(verified_client, staff_totp):
    response = verified_client.get("/admin/otp/")
    assert response.status_code == 200
    assert "phone" in response.content.decode()


# --- manage.py otp_setup ------------------------------------------------------------------------


def run_setup(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("otp_setup", *args, stdout=out)
    return out.getvalue()


def test_otp_setup_creates_a_confirmed_totp_device_and_prints_uri_and_qr(staff_user):
    output = run_setup("operator")

    device = TOTPDevice.objects.get(user=staff_user)
    assert device.confirmed is True
    assert device.config_url in output
    assert "█" in output or "▀" in output or "▄" in output  # the terminal QR code


def test_otp_setup_prints_backup_codes_that_work(staff_user):
    output = run_setup("operator", "--static", "4", "--no-qr")

    device = StaticDevice.objects.get(user=staff_user)
    tokens = list(device.token_set.values_list("token", flat=True))
    assert len(tokens) == 4
    assert all(token in output for token in tokens)
    assert device.verify_token(tokens[0]) is True


def test_otp_setup_adds_a_telegram_device(staff_user):
    run_setup("operator", "--no-totp", "--telegram-id", "5150")
    device = TelegramDevice.objects.get(user=staff_user)
    assert device.telegram_user_id == 5150 and device.confirmed
    assert not TOTPDevice.objects.exists()


def test_otp_setup_names_createsuperuser_for_an_unknown_user(db):
    with pytest.raises(CommandError, match="createsuperuser"):
        run_setup("ghost")


def test_otp_setup_refuses_a_non_staff_user(django_user_model):
    django_user_model.objects.create_user("visitor", password="x" * 20)
    with pytest.raises(CommandError, match="not staff"):
        run_setup("visitor")


def test_admin_pages_link_to_the_sign_in_devices(verified_client):
    body = verified_client.get("/admin/").content.decode()
    assert 'href="/admin/otp/">Sign-in devices</a>' in body
