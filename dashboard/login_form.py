"""The admin's login form: username, password and one-time code, signed in by one submit.

django-otp's form asks which device the code comes from and refuses a code without that choice;
its device list only appears after a submit has proved the password. A user with one device has
nothing to choose, so that device is taken. A user with several is shown the list on that first
submit, with the code kept, and is asked to choose (codes are never tried against every device: each
miss would count as a failed attempt on devices that were never used).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from django_otp import devices_for_user
from django_otp.admin import OTPAdminAuthenticationForm
from django_otp.models import Device


class CindyLoginForm(OTPAdminAuthenticationForm):
    otp_error_messages = dict(
        OTPAdminAuthenticationForm.otp_error_messages,
        device_required=_("Choose the device your code comes from, then log in again."),
    )

    def _chosen_device(self, user) -> Device | None:
        device = super()._chosen_device(user)
        if device is None and not self.cleaned_data.get("otp_device"):
            devices = list(devices_for_user(user, confirmed=True))
            if len(devices) == 1:
                return devices[0]
        return device
