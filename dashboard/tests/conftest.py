"""The dashboard's cast: OTP-verified staff, half-signed-in staff, a non-staff user, a sandbox agent.
And what the browser tests share: one migrated database that each live site copies, and one
Chromium, launched for the first browser test and closed after the last of a run of them (each test
has a browser context of its own, so no cookie or storage passes from one test to the next).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.plugins.otp_totp.models import TOTPDevice

from agents.models import Agent

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _SharedChromium:
    """One Chromium for consecutive browser tests.

    Playwright's sync API keeps an event loop running in the test thread, which would make the
    tests after it look like async code to Django and asyncio: the browser is closed as soon as
    the next test does not ask for it (see `pytest_runtest_teardown`), and launched again if a
    later one does.
    """

    def __init__(self) -> None:
        self.playwright = None
        self.browser = None

    def get(self):
        if self.browser is None:
            from playwright.sync_api import sync_playwright

            self.playwright = sync_playwright().start()
            try:
                self.browser = self.playwright.chromium.launch(
                    executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
                )
            except BaseException:
                self.close()
                raise
        return self.browser

    def close(self) -> None:
        browser, playwright = self.browser, self.playwright
        self.browser = self.playwright = None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


_CHROMIUM = _SharedChromium()


@pytest.fixture(scope="session")
def _shared_chromium(django_db_setup) -> Iterator[_SharedChromium]:
    # Closed at the latest when the session's fixtures are torn down, before the test database's
    # (set up first, so torn down after, whatever test of the run first asked for either): its
    # teardown must not run beside Playwright's loop. Without that order a run whose first browser
    # test came before its first database test, and whose last test used the browser, tore the
    # database down with Chromium open (SynchronousOnlyOperation).
    try:
        yield _CHROMIUM
    finally:
        _CHROMIUM.close()


@pytest.fixture
def chromium(_shared_chromium):
    """The shared Chromium; tests open their own context (`browser.new_context`) on it."""
    pytest.importorskip("playwright.sync_api")
    return _shared_chromium.get()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield  # the test's own fixtures (its browser context among them) are torn down first
    if nextitem is None or "chromium" not in nextitem.fixturenames:
        _CHROMIUM.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test's report ends with what the live site's processes logged: a page that
    waited in vain for the gateway says why only there."""
    outcome = yield
    report = outcome.get_result()
    site = getattr(item, "funcargs", {}).get("site")
    if report.when == "call" and report.failed and site is not None:
        for name in site.processes:
            report.sections.append((f"live site: {name}.log (its end)", site.log(name)))


@pytest.fixture(scope="session")
def site_template(migrated_database) -> object:
    """The database every live site starts from: the run's migrated database (`migrated_database`,
    migrated once per run, seconds), copied per site (a fraction of a second)."""
    return migrated_database


@dataclass
class Visitor:
    client: Client
    session_key: str


def _visitor(user, device: TOTPDevice | None) -> Visitor:
    client = Client()
    client.force_login(user)
    if device is not None:
        session = client.session
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session.save()
    return Visitor(client=client, session_key=client.session.session_key)


def make_user(username: str, *, staff: bool = True):
    return get_user_model().objects.create_user(
        username=username, password="correct horse battery staple", is_staff=staff
    )


#: What the dashboard's operator may do: its controls, translations and the sandbox chat.
OPERATOR_PERMISSIONS = (
    "change_conversation",
    "add_translation",
    "add_sandboxmessage",
    "view_agent",
    "change_agent",
)


@pytest.fixture
def staff(db):
    from django.contrib.auth.models import Permission

    from agents.models import AgentGrant

    user = make_user("operator")
    user.user_permissions.add(*Permission.objects.filter(codename__in=OPERATOR_PERMISSIONS))
    AgentGrant.objects.create(user=user, agent=None)  # every agent
    return user


@pytest.fixture
def staff_device(staff) -> TOTPDevice:
    return TOTPDevice.objects.create(user=staff, name="phone", confirmed=True)


@pytest.fixture
def verified(staff, staff_device) -> Visitor:
    """Staff who signed in with a password and a TOTP code."""
    return _visitor(staff, staff_device)


@pytest.fixture
def unverified(staff, staff_device) -> Visitor:
    """Staff who signed in with a password but not yet with a one-time code."""
    return _visitor(staff, None)


@pytest.fixture
def non_staff(db) -> Visitor:
    user = make_user("visitor", staff=False)
    device = TOTPDevice.objects.create(user=user, name="phone", confirmed=True)
    return _visitor(user, device)


@pytest.fixture
def foreign_device_visitor(staff, db) -> Visitor:
    """Staff whose session names a device that belongs to somebody else."""
    other = make_user("someone-else")
    device = TOTPDevice.objects.create(user=other, name="phone", confirmed=True)
    return _visitor(staff, device)


@pytest.fixture
def sandbox_agent(db) -> Agent:
    return Agent.objects.create(
        name="Wendy", phone="+15550000001", instructions="You are Wendy.", transport="sandbox"
    )


@pytest.fixture
def hostile_agent(db) -> Agent:
    return Agent.objects.create(
        name=f"Eve {HOSTILE}", phone="+15550000009", instructions="x", transport="sandbox"
    )
