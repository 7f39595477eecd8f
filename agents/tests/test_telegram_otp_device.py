from __future__ import annotations

import re

import pytest

from agents.models import Agent, GatewayRequest
from agents.models.otp_device import OTPDeliveryError, TelegramDevice, consume_code

pytestmark = pytest.mark.django_db


@pytest.fixture
def otp_agent(settings):
    settings.CINDY_OTP_AGENT = "Olive"
    return Agent.objects.create(name="Olive", phone="+15550001", instructions="Sends sign-in codes.")


@pytest.fixture
def device(staff_user):
    return TelegramDevice.objects.create(user=staff_user, name="Telegram", telegram_user_id=4242)


def sent_code(request_row: GatewayRequest) -> str:
    return re.search(r"\b(\d{6})\b", request_row.params["text"]).group(1)


def send(device: TelegramDevice) -> str:
    device.generate_challenge()
    return sent_code(GatewayRequest.objects.latest("id"))


def test_code_goes_to_the_staff_member_through_the_configured_agent(clock, otp_agent, device):
    message = device.generate_challenge()

    request_row = GatewayRequest.objects.get()
    assert request_row.agent == otp_agent
    assert request_row.kind == GatewayRequest.Kind.SEND_OTP
    assert request_row.params["user_id"] == 4242
    assert request_row.status == GatewayRequest.Status.PENDING
    assert request_row.created == clock.now()
    assert "sent" in message


def test_code_is_stored_only_as_a_keyed_hash(clock, otp_agent, device):
    code = send(device)
    device.refresh_from_db()

    assert len(code) == 6
    assert device.code_hash and code not in device.code_hash
    stored = {f.attname: getattr(device, f.attname) for f in TelegramDevice._meta.concrete_fields}
    assert code not in repr(stored)


def test_code_is_valid_for_five_minutes(clock, otp_agent, device):
    code = send(device)
    clock.advance(299)
    assert device.verify_token(code) is True


def test_code_expires_after_five_minutes(clock, otp_agent, device):
    code = send(device)
    clock.advance(301)
    assert device.verify_token(code) is False


def test_code_works_only_once(clock, otp_agent, device):
    code = send(device)
    assert device.verify_token(code) is True
    clock.advance(60)  # past any throttling
    assert device.verify_token(code) is False


def test_a_new_code_can_be_sent_at_most_every_30_seconds(clock, otp_agent, device):
    send(device)
    clock.advance(29)
    with pytest.raises(OTPDeliveryError, match="wait"):
        device.generate_challenge()
    assert GatewayRequest.objects.count() == 1

    clock.advance(1)
    device.generate_challenge()
    assert GatewayRequest.objects.count() == 2


def test_a_new_code_replaces_the_previous_one(clock, otp_agent, device):
    first = send(device)
    clock.advance(30)
    second = send(device)
    if first == second:  # one chance in a million; nothing to compare then
        return
    assert device.verify_token(first) is False
    clock.advance(10)
    assert device.verify_token(second) is True


def test_wrong_guesses_are_throttled_with_growing_delays(clock, otp_agent, device):
    code = send(device)
    assert device.verify_token("000000" if code != "000000" else "111111") is False
    # Locked for 1 s after the first failure: even the right code is refused.
    assert device.verify_is_allowed()[0] is False
    assert device.verify_token(code) is False
    clock.advance(1)
    assert device.verify_is_allowed()[0] is True

    assert device.verify_token("not-a-code") is False  # second failure: 2 s lock
    clock.advance(1.5)
    assert device.verify_token("not-a-code") is False  # refused while locked, not counted
    clock.advance(0.5)
    assert device.verify_token("not-a-code") is False  # third failure: 4 s lock
    allowed, info = device.verify_is_allowed()
    assert allowed is False and info["failure_count"] == 3
    clock.advance(3.9)
    assert device.verify_token(code) is False
    clock.advance(0.1)
    assert device.verify_token(code) is True
    device.refresh_from_db()
    assert device.throttling_failure_count == 0


def test_missing_otp_agent_setting_is_named_in_the_error(clock, settings, device):
    settings.CINDY_OTP_AGENT = ""
    with pytest.raises(OTPDeliveryError, match="CINDY_OTP_AGENT"):
        device.generate_challenge()


def test_unknown_otp_agent_is_named_in_the_error(clock, settings, device):
    settings.CINDY_OTP_AGENT = "Nobody"
    with pytest.raises(OTPDeliveryError, match='"Nobody"'):
        device.generate_challenge()
    assert GatewayRequest.objects.count() == 0


def test_a_used_code_does_not_stay_readable_in_the_sent_request(clock, otp_agent, device):
    code = send(device)
    request_row = GatewayRequest.objects.get()
    request_row.status = GatewayRequest.Status.DONE  # what the gateway records after sending
    request_row.save()

    assert device.verify_token(code) is True

    request_row.refresh_from_db()
    assert code not in request_row.params["text"]
    assert request_row.params["user_id"] == 4242


def test_an_unsent_request_is_withdrawn_when_a_newer_code_replaces_it(clock, otp_agent, device):
    old_code = send(device)
    clock.advance(30)
    send(device)

    first, second = GatewayRequest.objects.order_by("id")
    assert first.status == GatewayRequest.Status.FAILED
    assert "newer code" in first.error
    assert old_code not in first.params["text"]
    assert second.status == GatewayRequest.Status.PENDING


# --- Concurrency: two requests holding their own copies of the same device -----------------------


def two_copies(device: TelegramDevice) -> tuple[TelegramDevice, TelegramDevice]:
    """Two instances loaded at the same moment, as two parallel web requests would hold them."""
    return TelegramDevice.objects.get(pk=device.pk), TelegramDevice.objects.get(pk=device.pk)


def test_a_code_verified_by_two_requests_at_once_works_only_for_the_first(clock, otp_agent, device):
    code = send(device)
    first, second = two_copies(device)

    assert first.verify_token(code) is True
    # The second copy still holds the code's hash in memory; the row no longer does.
    assert second.code_hash
    assert second.verify_token(code) is False


def test_consuming_a_code_is_a_compare_and_set_that_refuses_a_second_use(clock, otp_agent, device):
    send(device)
    device.refresh_from_db()
    code_hash = device.code_hash

    assert consume_code(device_pk=device.pk, code_hash=code_hash) is True
    assert consume_code(device_pk=device.pk, code_hash=code_hash) is False
    device.refresh_from_db()
    assert device.code_hash == "" and device.valid_until is None


def test_a_parallel_guess_is_throttled_by_the_failure_another_request_recorded(clock, otp_agent, device):
    code = send(device)
    first, second = two_copies(device)

    assert first.verify_token("000000" if code != "000000" else "111111") is False
    # The second copy saw no failures when it was loaded; the locked row has one.
    assert second.verify_token(code) is False
    clock.advance(1)
    assert second.verify_token(code) is True


def test_parallel_wrong_guesses_are_all_counted(clock, otp_agent, device):
    send(device)
    first, second = two_copies(device)

    assert first.verify_token("not-a-code") is False
    clock.advance(1)
    assert second.verify_token("not-a-code") is False

    device.refresh_from_db()
    assert device.throttling_failure_count == 2


def test_two_parallel_resends_send_only_one_code(clock, otp_agent, device):
    send(device)
    clock.advance(30)
    first, second = two_copies(device)

    first.generate_challenge()
    with pytest.raises(OTPDeliveryError, match="wait 30 s"):
        second.generate_challenge()
    assert GatewayRequest.objects.count() == 2
