"""The admin's login form: password and one-time code in one submit, whatever devices the user has."""

from __future__ import annotations

import pytest
from django.test import Client
from django_otp.oath import totp
from django_otp.plugins.otp_static.models import StaticDevice
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard.tests.conftest import make_user

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"


def _code(device: TOTPDevice) -> str:
    code = totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits, drift=device.drift)
    return f"{code:0{device.digits}d}"


def _submit(client: Client, username: str, token: str, **fields):
    data = {"username": username, "password": PASSWORD, "otp_token": token, "next": "/dashboard/", **fields}
    return client.post("/admin/login/?next=/dashboard/", data)


def test_the_first_submit_signs_in_a_user_with_one_device():
    device = TOTPDevice.objects.create(user=make_user("operator"), name="phone", confirmed=True)
    client = Client()

    response = _submit(client, "operator", _code(device))

    assert response.status_code == 302 and response.url == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200


def test_a_wrong_code_with_one_device_is_refused_as_a_wrong_code():
    TOTPDevice.objects.create(user=make_user("operator"), name="phone", confirmed=True)

    response = _submit(Client(), "operator", "000000")

    assert response.status_code == 200
    assert "Please select a device" not in response.content.decode()
    assert "Invalid token" in response.content.decode()


def test_a_user_with_several_devices_is_shown_the_list_and_the_code_is_kept():
    user = make_user("operator")
    phone = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    StaticDevice.objects.create(user=user, name="Backup codes", confirmed=True)
    client = Client()
    typed = _code(phone)  # once: a second reading may fall in the next 30-second step

    response = _submit(client, "operator", typed)

    page = response.content.decode()
    assert response.status_code == 200
    assert "Please select a device" not in page
    assert "Choose the device your code comes from" in page
    assert 'id="id_otp_device"' in page and ">phone</option>" in page and ">Backup codes</option>" in page
    assert f'value="{typed}"' in page  # the code stays typed: choosing the device is all that is left
    response = _submit(client, "operator", _code(phone), otp_device=phone.persistent_id)
    assert response.status_code == 302 and response.url == "/dashboard/"


def test_the_login_page_shows_no_device_list_before_the_password_is_known():
    TOTPDevice.objects.create(user=make_user("operator"), name="phone", confirmed=True)

    page = Client().get("/admin/login/").content.decode()

    assert "id_otp_device" not in page and "id_otp_token" in page
