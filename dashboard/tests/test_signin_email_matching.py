"""Which staff account a verified Google address is linked to: the same address after normalisation
(NFKC, case folding, IDNA for the domain), compared exactly, never by a database collation (on
MariaDB `utf8mb4_general_ci` equates `é` with `e` and `ı` with `i`), and nobody when two accounts
would match. Run on SQLite and on MariaDB (`DATABASE_URL=mysql://...`)."""

from __future__ import annotations

import pytest
from allauth.socialaccount.models import SocialAccount

from agents.models import AccessRequest
from cindy_site.testing.oidc import Person, google_signin_configured, sign_in_with_google
from dashboard.signin import normalised_email

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("typed", "normalised"),
    [
        ("Ada@Example.COM", "ada@example.com"),
        ("  ada@example.com ", "ada@example.com"),
        ("ａｄａ@ｅｘａｍｐｌｅ.com", "ada@example.com"),  # full-width letters are the same letters
        ("JOSÉ@exämple.com", "josé@xn--exmple-cua.com"),
        ("josé@XN--EXMPLE-CUA.com", "josé@xn--exmple-cua.com"),
        ("ada@gmaıl.com", "ada@xn--gmal-nza.com"),  # a dotless ı is not an i
        ("Straße@example.com", "strasse@example.com"),  # case folding, as Python folds
        ("ada@", None),
        ("@example.com", None),
        ("ada", None),
        ("ada@exa mple.com", None),
    ],
)
def test_an_address_is_normalised_to_one_comparable_form_or_refused(typed, normalised):
    assert normalised_email(typed) == normalised


@pytest.fixture
def provider(settings):
    with google_signin_configured(settings) as stand_in:
        yield stand_in


def _staff(django_user_model, username: str, email: str):
    return django_user_model.objects.create_user(username, email, "x", is_staff=True)


@pytest.mark.parametrize(
    ("staff_email", "google_email"),
    [
        ("ada@example.com", "ada@éxample.com"),  # another domain
        ("ada@gmail.com", "ada@gmaıl.com"),  # dotless ı: another domain
        ("ada@exämple.com", "ada@example.com"),
    ],
)
def test_a_look_alike_address_is_not_linked_and_asks_for_access(
    client, provider, django_user_model, staff_email, google_email
):
    _staff(django_user_model, "ada", staff_email)

    page = sign_in_with_google(client, provider, Person(sub="g-700", email=google_email))

    assert page.status_code == 200 and b"request to get in has been recorded" in page.content
    assert not SocialAccount.objects.exists()
    assert AccessRequest.objects.get().email == google_email
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("google_email", ["rené@example.com", "ádá@example.com"])
def test_an_address_with_letters_beyond_ascii_before_the_at_is_refused_as_no_address(
    client, provider, django_user_model, google_email
):
    """allauth keeps only addresses Django's validator accepts (an ASCII mailbox), so such an address
    reaches nobody's account, whatever the database's collation says."""
    _staff(django_user_model, "ada", "rene@example.com")
    _staff(django_user_model, "ada2", "ada@example.com")

    page = sign_in_with_google(client, provider, Person(sub="g-704", email=google_email))

    assert page.status_code == 403 and b"the provider gave no email address" in page.content
    assert not SocialAccount.objects.exists()
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("staff_email", "google_email"),
    [
        ("ada@example.com", "ada@ｅｘａｍｐｌｅ.com"),  # full-width letters are the same letters
        ("ada@exämple.com", "ADA@XN--EXMPLE-CUA.com"),  # the same domain, as Unicode and as punycode
        ("ada@xn--exmple-cua.com", "ada@EXÄMPLE.com"),
        ("Ada@Example.com", "ada@example.com"),
        ("ａｄａ@example.com", "ada@example.com"),
    ],
)
def test_the_same_address_in_another_form_is_linked(
    client, provider, django_user_model, staff_email, google_email
):
    user = _staff(django_user_model, "ada", staff_email)

    back = sign_in_with_google(client, provider, Person(sub="g-701", email=google_email))

    assert back.status_code == 302 and back["Location"] == "/accounts/otp/"
    assert SocialAccount.objects.get(provider="google").user == user


@pytest.mark.parametrize(
    "second", ["ADA@example.com", "ａｄａ@example.com", "ada@ｅｘａｍｐｌｅ.com", "ada@EXAMPLE.com"]
)
def test_nobody_is_linked_when_two_staff_accounts_would_match(client, provider, django_user_model, second):
    _staff(django_user_model, "ada", "ada@example.com")
    _staff(django_user_model, "ada2", second)

    page = sign_in_with_google(client, provider, Person(sub="g-702", email="ada@example.com"))

    assert page.status_code == 200 and b"request to get in has been recorded" in page.content
    assert not SocialAccount.objects.exists()


def test_an_inactive_or_non_staff_account_with_the_address_does_not_count(
    client, provider, django_user_model
):
    user = _staff(django_user_model, "ada", "ada@example.com")
    django_user_model.objects.create_user("old", "ADA@example.com", "x", is_staff=True, is_active=False)
    django_user_model.objects.create_user("plain", "ada@example.com", "x")

    back = sign_in_with_google(client, provider, Person(sub="g-703", email="ada@example.com"))

    assert back["Location"] == "/accounts/otp/"
    assert SocialAccount.objects.get().user == user
