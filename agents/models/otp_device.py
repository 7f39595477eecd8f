"""A one-time-password device that delivers its codes as a Telegram message.

The web process never talks to Telegram: the device writes a `send_otp` GatewayRequest for the agent
named by `CINDY_OTP_AGENT`, and the gateway holding that agent sends the text to the staff member's
Telegram user id. Codes are 6 digits, stored only as a keyed hash, valid for 5 minutes and used
once; a new code can be asked for at most every 30 seconds, and wrong guesses back off
exponentially (django-otp's ThrottlingMixin, driven by the injected clock).

Sending and verifying lock the device row (`select_for_update`) and decide on what the database
holds, not on the caller's instance: parallel requests cannot both pass the resend limit, parallel
guesses cannot slip past the throttle, failures are counted with an F expression, and a code is
consumed by a compare-and-set on its hash, so it works once even under concurrency.
"""

from __future__ import annotations

import datetime as dt
import math
import secrets

from django.conf import settings
from django.db import models, transaction
from django.db.models import F
from django.utils.crypto import constant_time_compare, salted_hmac
from django_otp.models import (
    MAX_THROTTLE_DELAY_SECONDS,
    Device,
    GenerateNotAllowed,
    ThrottlingMixin,
    VerifyNotAllowed,
)

from agents.models.agent import Agent, GatewayRequest
from agents.signals import gateway_request_created
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
    # Only rows that still hold a code are touched, so this stays cheap however many were sent.
    GatewayRequest.objects.filter(
        kind=GatewayRequest.Kind.SEND_OTP,
        status__in=[GatewayRequest.Status.DONE, GatewayRequest.Status.FAILED],
        params__user_id=telegram_user_id,
    ).exclude(params__text=SCRUBBED_TEXT).update(params=scrubbed)


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
        """Send a fresh code. Steps: lock the device row, check the resend limit on the locked row
        (not on this possibly stale instance, so two parallel requests cannot both send), find the
        OTP agent, store the hash and expiry, then queue the gateway request in the same transaction."""
        with transaction.atomic():
            locked = TelegramDevice.objects.select_for_update().get(pk=self.pk)
            allowed, info = locked.generate_is_allowed()
            if not allowed:
                self.last_sent_at = locked.last_sent_at
                wait = max(1, math.ceil((info["next_challenge_at"] - clock.now()).total_seconds()))
                raise OTPDeliveryError(
                    f"a code was sent less than {RESEND_AFTER_SECONDS} s ago: wait {wait} s"
                )
            agent = otp_agent()
            code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
            now = clock.now()
            _scrub_sent_codes(self.telegram_user_id)
            self.code_hash = _hash_code(self.pk, code)
            self.valid_until = now + dt.timedelta(seconds=CODE_VALID_SECONDS)
            self.last_sent_at = now
            TelegramDevice.objects.filter(pk=self.pk).update(
                code_hash=self.code_hash, valid_until=self.valid_until, last_sent_at=now
            )
            request = GatewayRequest.objects.create(
                agent=agent,
                kind=GatewayRequest.Kind.SEND_OTP,
                params={
                    "user_id": self.telegram_user_id,
                    "text": f"Your Cindy sign-in code is {code}. It expires in {CODE_VALID_SECONDS // 60} minutes.",
                },
                created=now,
            )
            # the code goes out at once rather than at the gateway's next tick
            gateway_request_created.send(sender=GatewayRequest, request=request)
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
        if not commit:
            self.throttling_failure_count += 1
            return
        # Counted in the database (F expression), so parallel wrong guesses all count.
        TelegramDevice.objects.filter(pk=self.pk).update(
            throttling_failure_timestamp=self.throttling_failure_timestamp,
            throttling_failure_count=F("throttling_failure_count") + 1,
        )
        self.refresh_from_db(fields=["throttling_failure_count"])

    def verify_token(self, token) -> bool:
        """Check a code against the locked device row. Steps: lock the row, apply the throttle to
        what the database holds, compare, then consume the code with a compare-and-set so that of
        two verifications of the same code only one succeeds."""
        token = str(token or "").strip()
        with transaction.atomic():
            locked = TelegramDevice.objects.select_for_update().get(pk=self.pk)
            self._copy_state(locked)
            allowed, _ = locked.verify_is_allowed()
            if not allowed:
                return False
            live = (
                bool(locked.code_hash) and locked.valid_until is not None and clock.now() < locked.valid_until
            )
            if live and constant_time_compare(_hash_code(self.pk, token), locked.code_hash):
                if consume_code(device_pk=self.pk, code_hash=locked.code_hash):
                    self._copy_state(TelegramDevice.objects.get(pk=self.pk))
                    _scrub_sent_codes(self.telegram_user_id)
                    return True
            self.throttle_increment()
            return False

    def _copy_state(self, other: TelegramDevice) -> None:
        for field in STATE_FIELDS:
            setattr(self, field, getattr(other, field))


#: The fields that verification and sending change; copied from the locked row to the instance.
STATE_FIELDS = (
    "code_hash",
    "valid_until",
    "last_sent_at",
    "throttling_failure_count",
    "throttling_failure_timestamp",
)


def consume_code(*, device_pk: int, code_hash: str) -> bool:
    """Forget the code `code_hash` if the device still holds it: a compare-and-set, so a code is
    used at most once even when two requests verify it at the same moment. Success also clears
    the failure count."""
    if not code_hash:
        return False
    updated = TelegramDevice.objects.filter(pk=device_pk, code_hash=code_hash).update(
        code_hash="",
        valid_until=None,
        throttling_failure_count=0,
        throttling_failure_timestamp=None,
    )
    return updated == 1
