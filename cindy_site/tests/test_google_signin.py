"""Sign-in with Google against a local OpenID Connect provider (`cindy_site.testing.oidc`): the real
authorization-code flow through allauth, ending at the one-time-code step."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.test import Client
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import AccessRequest
from cindy_site.testing.oidc import Person, google_signin_configured, sign_in_with_google
from cindy_site.testing.staff import totp_now, verify_client

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/oidc/google/login/"


@pytest.fixture
def provider(settings):
    with google_signin_configured(settings) as stand_in:
        yield stand_in


@pytest.fixture
def staff_with_device(django_user_model):
    user = django_user_model.objects.create_user(
        "ada", "ada@example.com", "x", is_staff=True, first_name="Ada"
    )
    return TOTPDevice.objects.create(user=user, name="phone", confirmed=True)


def test_without_configuration_there_is_no_button_and_no_google_url(client):
    page = client.get("/admin/login/")
    assert page.status_code == 200
    assert b"Sign in with Google" not in page.content
    assert client.post(LOGIN, {"process": "login"}).status_code == 404
    assert client.get("/accounts/otp/").status_code == 404


def test_a_staff_member_signs_in_with_google_and_still_needs_the_one_time_code(
    client, provider, staff_with_device, settings
):
    settings.OTP_TOTP_THROTTLE_FACTOR = 0  # a wrong code below must not delay the right one
    user = staff_with_device.user
    assert b"Sign in with Google" in client.get("/admin/login/").content

    back = sign_in_with_google(client, provider, Person(sub="g-100", email="ADA@example.com", name="Ada L"))

    assert back.status_code == 302 and back["Location"] == "/accounts/otp/"
    assert {"GET /.well-known/openid-configuration", "GET /authorize", "POST /token"} <= set(
        provider.requests
    )
    assert SocialAccount.objects.get(provider="google").user == user  # linked by the verified address
    # Signed in, but not verified: the dashboard and the admin stay closed.
    assert client.get("/dashboard/")["Location"].startswith("/admin/login/")
    assert client.get("/admin/").status_code == 302
    step = client.get("/accounts/otp/")
    assert step.status_code == 200 and b"phone" in step.content

    wrong = client.post(
        "/accounts/otp/", {"otp_device": staff_with_device.persistent_id, "otp_token": "000000"}
    )
    assert wrong.status_code == 200 and client.get("/dashboard/").status_code == 302

    done = client.post(
        "/accounts/otp/",
        {"otp_device": staff_with_device.persistent_id, "otp_token": totp_now(staff_with_device)},
    )
    assert done.status_code == 302 and done["Location"] == "/dashboard/"
    assert client.get("/dashboard/").status_code == 200


def test_where_the_person_was_going_is_kept_through_the_code_step(client, provider, staff_with_device):
    back = sign_in_with_google(
        client, provider, Person(sub="g-101", email="ada@example.com"), next_url="/admin/"
    )

    assert back["Location"] == "/accounts/otp/?next=%2Fadmin%2F"
    step = client.get(back["Location"])
    assert b'name="next" value="/admin/"' in step.content
    done = client.post(
        back["Location"],
        {
            "otp_device": staff_with_device.persistent_id,
            "otp_token": totp_now(staff_with_device),
            "next": "/admin/",
        },
    )
    assert done["Location"] == "/admin/"


def test_an_unknown_address_records_an_access_request_and_creates_nothing(client, provider):
    users_before = get_user_model().objects.count()

    page = sign_in_with_google(
        client, provider, Person(sub="g-200", email="newcomer@example.com", name="New Comer")
    )

    assert page.status_code == 200 and b"request to get in has been recorded" in page.content
    assert get_user_model().objects.count() == users_before
    assert not SocialAccount.objects.exists()
    request = AccessRequest.objects.get()
    assert (request.email, request.subject, request.status) == ("newcomer@example.com", "g-200", "pending")
    assert "_auth_user_id" not in client.session

    again = sign_in_with_google(Client(), provider, Person(sub="g-200", email="newcomer@example.com"))
    assert again.status_code == 200
    assert AccessRequest.objects.get().attempts == 2


def test_an_unverified_address_is_not_linked_to_the_staff_account_that_has_it(
    client, provider, staff_with_device
):
    page = sign_in_with_google(
        client, provider, Person(sub="g-300", email="ada@example.com", email_verified=False)
    )

    assert page.status_code == 200
    assert not SocialAccount.objects.exists()
    assert AccessRequest.objects.get().email == "ada@example.com"


def test_an_owner_approves_a_request_and_the_account_exists_without_a_role(
    client, provider, verified_client, staff_user
):
    sign_in_with_google(client, provider, Person(sub="g-400", email="grace@example.com", name="Grace H"))
    request = AccessRequest.objects.get()

    verified_client.post(
        "/admin/agents/accessrequest/", {"action": "approve", "_selected_action": [request.pk], "index": "0"}
    )

    request.refresh_from_db()
    user = request.user
    assert request.status == "approved" and request.decided_by == staff_user
    assert (user.username, user.first_name, user.is_staff, user.is_active) == (
        "grace@example.com",
        "Grace",
        True,
        True,
    )
    assert not user.groups.exists() and not user.user_permissions.exists() and not user.has_usable_password()
    # Her next sign-in is hers, and stops at the code step: she has no device yet.
    fresh = Client()
    back = sign_in_with_google(fresh, provider, Person(sub="g-400", email="grace@example.com"))
    assert back["Location"] == "/accounts/otp/"
    stopped = fresh.get("/accounts/otp/")
    assert stopped.status_code == 403 and b"no confirmed one-time-code device" in stopped.content
    assert "_auth_user_id" not in fresh.session


def test_an_id_token_for_another_client_is_refused(client, provider, staff_with_device):
    provider.claims_override = {"aud": "someone-else"}

    page = sign_in_with_google(client, provider, Person(sub="g-500", email="ada@example.com"))

    assert page.status_code == 401  # allauth's "authentication error" page
    assert "_auth_user_id" not in client.session
    assert not SocialAccount.objects.exists() and not AccessRequest.objects.exists()


def test_a_verified_session_is_what_the_admin_needs(client, provider, staff_with_device):
    sign_in_with_google(client, provider, Person(sub="g-600", email="ada@example.com"))
    verify_client(client, staff_with_device)
    assert client.get("/admin/").status_code == 200
