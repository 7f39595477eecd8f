"""A one-time-password device that delivers its codes as a Telegram message.

The web process never talks to Telegram: the device writes a `send_otp` GatewayRequest for the agent
named by `CINDY_OTP_AGENT`, and the gateway holding that agent sends the text to the staff member's
Telegram user id. Codes are 6 digits, stored only as a keyed hash, valid for 5 minutes and used
once; a new code can be asked for at most every 30 seconds, and wrong guesses back off
exponentially (django-otp's ThrottlingMixin, driven by the injected clock).
"""

from __future__ import annotations

import datetime as dt
import secrets

from django.conf import settings
from django.db import models
from django.utils.crypto import constant_time_compare, salted_hmac
from django_otp.models import (
    MAX_THROTTLE_DELAY_SECONDS,
    Device,
    GenerateNotAllowed,
    ThrottlingMixin,
    VerifyNotAllowed,
)

from cindy_site import clock

CODE_DIGITS = 6
CODE_VALID_SECONDS = 300
RESEND_AFTER_SECONDS = 30
THROTTLE_FACTOR = 1  # seconds before the 2nd guess; doubles after each wrong one


class OTPDeliveryError(Exception):
    """A code could not be handed to the gateway; the message says what to fix."""


def _hash_code(device_pk: int, code: str) -> str:
    # Keyed with SECRET_KEY: a 6-digit space is trivial to brute-force from a plain digest.
    return salted_hmac("cindy.otp.telegram", f"{device_pk}:{code}", algorithm="sha256").hexdigest()


def otp_agent():
    """The agent whose account sends codes, or OTPDeliveryError naming the setting to fix."""
    from agents.models import Agent

    name = settings.CINDY_OTP_AGENT
    if not name:
        raise OTPDeliveryError(
            "CINDY_OTP_AGENT is not set: set it to the name of the agent whose Telegram account sends codes"
        )
    agent = Agent.objects.filter(name=name).first()
    if agent is None:
        raise OTPDeliveryError(
            f'CINDY_OTP_AGENT is "{name}", but no agent has that name: import it or fix the setting'
        )
    return agent


SCRUBBED_TEXT = "(one-time code, no longer valid)"


def _scrub_sent_codes(telegram_user_id: int) -> None:
    """Blank the text of earlier send_otp requests to this user: the gateway needed the code in clear
    to send it, but nothing should keep it once it has been used or replaced. A request the gateway
    has not picked up yet carries a code that no longer works, so it is withdrawn instead of sent."""
    from agents.models import GatewayRequest

    scrubbed = {"user_id": telegram_user_id, "text": SCRUBBED_TEXT}
    GatewayRequest.objects.filter(
        kind=GatewayRequest.Kind.SEND_OTP,
        status=GatewayRequest.Status.PENDING,
        params__user_id=telegram_user_id,
    ).update(
        status=GatewayRequest.Status.FAILED,
        error="withdrawn: a newer code replaced this one before it was sent",
        params=scrubbed,
        finished=clock.now(),
    )
    finished = GatewayRequest.objects.filter(
        kind=GatewayRequest.Kind.SEND_OTP,
        status__in=[GatewayRequest.Status.DONE, GatewayRequest.Status.FAILED],
        params__user_id=telegram_user_id,
    )
    for request_row in finished:
        if request_row.params.get("text") != SCRUBBED_TEXT:
            request_row.params = {**request_row.params, "text": SCRUBBED_TEXT}
            request_row.save(update_fields=["params"])


class TelegramDevice(ThrottlingMixin, Device):
    telegram_user_id = models.BigIntegerField(help_text="The staff member's Telegram user id")
    code_hash = models.CharField(max_length=64, blank=True, editable=False)
    valid_until = models.DateTimeField(null=True, blank=True, editable=False)
    last_sent_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta(Device.Meta):
        app_label = "agents"
        verbose_name = "Telegram OTP device"

    def __str__(self) -> str:
        return f"{self.name or 'Telegram'} ({self.user}, Telegram {self.telegram_user_id})"

    # --- sending ---------------------------------------------------------------------------

    def generate_is_allowed(self):
        if self.last_sent_at is not None:
            next_at = self.last_sent_at + dt.timedelta(seconds=RESEND_AFTER_SECONDS)
            if clock.now() < next_at:
                return False, {
                    "reason": GenerateNotAllowed.COOLDOWN_DURATION_PENDING,
                    "next_challenge_at": next_at,
                }
        return True, None

    def generate_challenge(self) -> str:
        """Send a fresh code. Steps: check the resend limit, find the OTP agent, store the hash
        and expiry, then queue the gateway request in the same transaction."""
        from django.db import transaction

        from agents.models import GatewayRequest

        allowed, info = self.generate_is_allowed()
        if not allowed:
            wait = int((info["next_challenge_at"] - clock.now()).total_seconds()) + 1
            raise OTPDeliveryError(f"a code was sent less than {RESEND_AFTER_SECONDS} s ago: wait {wait} s")
        agent = otp_agent()
        code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
        now = clock.now()
        with transaction.atomic():
            _scrub_sent_codes(self.telegram_user_id)
            self.code_hash = _hash_code(self.pk, code)
            self.valid_until = now + dt.timedelta(seconds=CODE_VALID_SECONDS)
            self.last_sent_at = now
            self.save(update_fields=["code_hash", "valid_until", "last_sent_at"])
            GatewayRequest.objects.create(
                agent=agent,
                kind=GatewayRequest.Kind.SEND_OTP,
                params={
                    "user_id": self.telegram_user_id,
                    "text": f"Your Cindy sign-in code is {code}. It expires in {CODE_VALID_SECONDS // 60} minutes.",
                },
                created=now,
            )
        return "a code was sent to your Telegram account"

    # --- verifying -------------------------------------------------------------------------

    def get_throttle_factor(self) -> int:
        return THROTTLE_FACTOR

    def verify_is_allowed(self):
        # ThrottlingMixin's rule, on the injected clock instead of timezone.now().
        if self.throttling_failure_count > 0 and self.throttling_failure_timestamp is not None:
            required = min(
                THROTTLE_FACTOR * (2 ** (self.throttling_failure_count - 1)), MAX_THROTTLE_DELAY_SECONDS
            )
            locked_until = self.throttling_failure_timestamp + dt.timedelta(seconds=required)
            if clock.now() < locked_until:
                return False, {
                    "reason": VerifyNotAllowed.N_FAILED_ATTEMPTS,
                    "failure_count": self.throttling_failure_count,
                    "locked_until": locked_until,
                }
        return True, None

    def throttle_increment(self, commit: bool = True) -> None:
        self.throttling_failure_timestamp = clock.now()
        self.throttling_failure_count += 1
        if commit:
            self.save(update_fields=["throttling_failure_timestamp", "throttling_failure_count"])

    def verify_token(self, token) -> bool:
        allowed, _ = self.verify_is_allowed()
        if not allowed:
            return False
        token = str(token or "").strip()
        live = bool(self.code_hash) and self.valid_until is not None and clock.now() < self.valid_until
        if live and constant_time_compare(_hash_code(self.pk, token), self.code_hash):
            # Single use: forget the code before reporting success.
            self.code_hash = ""
            self.valid_until = None
            self.throttle_reset(commit=False)
            self.save()
            _scrub_sent_codes(self.telegram_user_id)
            return True
        self.throttle_increment()
        return False
