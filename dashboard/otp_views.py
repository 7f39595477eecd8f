"""Staff pages for OTP devices. Every view is wrapped by the admin site, so only verified staff get here.

The first device of the first account comes from `manage.py otp_setup`; after that, staff add devices
here: an authenticator app (TOTP, with a QR code), backup codes, or a Telegram device.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django_otp import devices_for_user
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models.otp_device import OTPDeliveryError, TelegramDevice
from dashboard import otp

SESSION_PENDING_TOTP = "cindy_pending_totp_device"
SESSION_PENDING_TELEGRAM = "cindy_pending_telegram_device"


class TokenForm(forms.Form):
    token = forms.CharField(label="Code", max_length=16, strip=True)


class TelegramIdForm(forms.Form):
    telegram_user_id = forms.IntegerField(
        label="Your Telegram user id", min_value=1, help_text="A number, e.g. 123456789 (not your @username)"
    )


class StaticCountForm(forms.Form):
    count = forms.IntegerField(label="How many codes", min_value=1, max_value=50, initial=10)


def _render(request: HttpRequest, template: str, context: dict) -> HttpResponse:
    return TemplateResponse(request, template, {**admin.site.each_context(request), **context})


def devices(request: HttpRequest) -> HttpResponse:
    return _render(
        request,
        "otp/devices.html",
        {
            "title": "Sign-in devices",
            "devices": [
                {"name": d.name, "kind": d._meta.verbose_name, "confirmed": d.confirmed}
                for d in devices_for_user(request.user, confirmed=None)
            ],
        },
    )


def _pending(request: HttpRequest, key: str, model):
    pk = request.session.get(key)
    if pk is None:
        return None
    return model.objects.filter(pk=pk, user=request.user, confirmed=False).first()


def enroll_totp(request: HttpRequest) -> HttpResponse:
    """Two steps, both POSTs: "create" makes a new unconfirmed device (a GET only shows the page), and
    the app's first code confirms it. A pending device is shown again on reload."""
    device = _pending(request, SESSION_PENDING_TOTP, TOTPDevice)
    if request.method == "POST" and request.POST.get("action") == "create":
        if device is None:
            device = otp.totp_device_create(user=request.user, confirmed=False)
            request.session[SESSION_PENDING_TOTP] = device.pk
        return redirect("admin:otp_enroll_totp")
    form = TokenForm(request.POST if request.method == "POST" and device is not None else None)
    if form.is_bound and form.is_valid():
        if device.verify_token(form.cleaned_data["token"]):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            del request.session[SESSION_PENDING_TOTP]
            messages.success(request, f'Authenticator app "{device.name}" added.')
            return redirect("admin:otp_devices")
        form.add_error("token", "That code does not match: check the phone's clock and try the next code.")
    context: dict = {"title": "Add an authenticator app", "form": form, "device": device}
    if device is not None:
        uri = device.config_url
        context.update({"qr_svg": otp.qr_svg(uri), "otpauth_uri": uri})
    return _render(request, "otp/enroll_totp.html", context)


def static_codes(request: HttpRequest) -> HttpResponse:
    form = StaticCountForm(request.POST or None)
    codes: list[str] = []
    if request.method == "POST" and form.is_valid():
        codes = otp.static_codes_replace(user=request.user, count=form.cleaned_data["count"])
    return _render(request, "otp/static_codes.html", {"title": "Backup codes", "form": form, "codes": codes})


def enroll_telegram(request: HttpRequest) -> HttpResponse:
    """Two steps: the user id (a code is sent through CINDY_OTP_AGENT), then the code received."""
    device = _pending(request, SESSION_PENDING_TELEGRAM, TelegramDevice)
    id_form = TelegramIdForm(
        request.POST if request.method == "POST" and "telegram_user_id" in request.POST else None
    )
    token_form = TokenForm(request.POST if request.method == "POST" and "token" in request.POST else None)
    if id_form.is_bound and id_form.is_valid():
        if device is not None:
            device.delete()
        device = otp.telegram_device_create(
            user=request.user, telegram_user_id=id_form.cleaned_data["telegram_user_id"], confirmed=False
        )
        request.session[SESSION_PENDING_TELEGRAM] = device.pk
        try:
            messages.info(request, device.generate_challenge().capitalize() + ".")
        except OTPDeliveryError as exc:
            messages.error(request, f"No code sent: {exc}")
        return redirect("admin:otp_enroll_telegram")
    if token_form.is_bound and device is not None and token_form.is_valid():
        if device.verify_token(token_form.cleaned_data["token"]):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            del request.session[SESSION_PENDING_TELEGRAM]
            messages.success(request, "Telegram device added.")
            return redirect("admin:otp_devices")
        token_form.add_error("token", "That code is wrong or expired: send a new one.")
    return _render(
        request,
        "otp/enroll_telegram.html",
        {"title": "Add a Telegram device", "id_form": id_form, "token_form": token_form, "device": device},
    )
