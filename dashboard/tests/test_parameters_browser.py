"""The admin's global parameters and models offered to personas, in Chromium, against the real site:
a parameter changed on the "LLMs and prices" page applies to the next planning turn of the gateway
and workers already running, without a restart (the LLM request that reaches the fake server shows it).

Screenshots go to artifacts/params-*.png.
"""

# The module shares test_browser.py's fixtures by importing them, which ruff reads as redefinitions.
# ruff: noqa: F811

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import pytest

from cindy_site.testing.fake_llm import FakeLLMServer, RecordedRequest
from conversations.models import ActivityEvent
from dashboard.tests.live_site import LiveSite
from dashboard.tests.test_browser import (  # noqa: F401 - fixtures shared with the dashboard walk
    ARTIFACTS,
    _agent,
    _log_in,
    _staff,
    page,
    site_db,
    tasks,
)
from engine.tests.processes import wait_for
from llm.models import ModelPrice, OfferedModel, SiteParameter
from sandbox.services.chats import sandbox_say

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

pytestmark = pytest.mark.browser

PAGE = "/admin/llm/offeredmodel/"


@pytest.fixture(scope="module")
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        server.set_default_reply(tasks())
        yield server


@pytest.fixture(scope="module")
def site(llm, site_template, tmp_path_factory, django_db_blocker) -> Iterator[LiveSite]:
    with django_db_blocker.unblock():
        live = LiveSite(tmp_path_factory.mktemp("params"), llm_url=llm.url, template=site_template)
        try:
            yield live.start()
        finally:
            live.stop()


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"params-{name}.png"), full_page=True)


def _planning_request(llm: FakeLLMServer, marker: str, site: LiveSite) -> RecordedRequest:
    """The planning request whose history holds the message `marker` (the newest one sent)."""

    def found() -> RecordedRequest | None:
        for request in list(llm.requests):
            if request.api == "gemini" and marker in json.dumps(request.json):
                return request
        return None

    return wait_for(found, f"a planning turn for {marker}", site.logs / "gateway.log")


def _set_parameter(page, name: str, value: str) -> None:
    page.goto(PAGE)
    page.locator(f"#parameter-{name} a.edit-parameter").click()
    page.fill("#id_value", value)
    page.get_by_role("button", name="Save").click()
    expect(page.locator(f"#parameter-{name} td.source")).to_contain_text("admin")


def test_a_parameter_changed_in_the_admin_applies_to_the_next_turn_without_a_restart(site_db, page, llm):
    agent = _agent(f"Paula {secrets.token_hex(2)}")
    agent.llm = ""  # the agent follows DEFAULT_AGENT_LLM
    agent.save(update_fields=["llm"])
    site_db.start_gateway()
    sandbox_say(agent=agent, text="note-one: the weather", as_name="Alice")
    first = _planning_request(llm, "note-one", site_db)
    sandbox_say(agent=agent, text="note-two: the garden", as_name="Alice")
    second = _planning_request(llm, "note-two", site_db)
    assert first.model == second.model == "gemini-3-flash-preview"  # the environment's "gemini"
    assert "note-one" in json.dumps(second.json)  # the whole history (CINDY_HISTORY_SIZE 500)

    _log_in(page, _staff("tuner"), next_url=PAGE)
    expect(page.locator("#parameter-DEFAULT_AGENT_LLM td.source")).to_have_text("environment")
    # A name that does not route is refused, naming the parameter, the value and the fix.
    page.locator("#parameter-DEFAULT_AGENT_LLM a.edit-parameter").click()
    page.fill("#id_value", "llama")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".errornote")).to_contain_text('DEFAULT_AGENT_LLM: LLM "llama" is not a known name')
    assert not SiteParameter.objects.exists()

    _set_parameter(page, "DEFAULT_AGENT_LLM", "gemini-2.5-pro")
    _set_parameter(page, "CINDY_HISTORY_SIZE", "2")
    expect(page.locator("#parameter-CINDY_HISTORY_SIZE td.value")).to_have_text("2")
    _shot(page, "llms")

    sandbox_say(agent=agent, text="note-three: the harvest", as_name="Alice")
    third = _planning_request(llm, "note-three", site_db)
    assert third.model == "gemini-2.5-pro"
    history = json.dumps(third.json)
    assert "note-two" in history and "note-one" not in history  # the newest two messages only

    # Reset: the environment's default is back for the turn after.
    page.goto(f"{PAGE}parameters/DEFAULT_AGENT_LLM/")
    page.get_by_role("button", name="Reset to the environment's value").click()
    expect(page.locator("#parameter-DEFAULT_AGENT_LLM td.source")).to_have_text("environment")
    sandbox_say(agent=agent, text="note-four: the rain", as_name="Alice")
    assert _planning_request(llm, "note-four", site_db).model == "gemini-3-flash-preview"

    audit = list(ActivityEvent.objects.filter(summary__startswith="Global parameter").order_by("id"))
    assert [e.summary for e in audit] == [
        f"Global parameter DEFAULT_AGENT_LLM changed from gemini (environment) to gemini-2.5-pro by {audit[0].data['by']}",
        f"Global parameter CINDY_HISTORY_SIZE changed from 500 (environment) to 2 by {audit[0].data['by']}",
        f"Global parameter DEFAULT_AGENT_LLM reset from gemini-2.5-pro to the environment's gemini by {audit[0].data['by']}",
    ]
    assert audit[0].data["by"].startswith("tuner-")
    page.goto(f"{PAGE}parameters/CINDY_HISTORY_SIZE/")
    page.get_by_role("button", name="Reset to the environment's value").click()
    expect(page.locator("#parameter-CINDY_HISTORY_SIZE td.source")).to_have_text("environment")
    assert page.dialogs == []

    # The page and the form fit the admin's 1280 px window (test_admin_at_1280.py).
    page.set_viewport_size({"width": 1280, "height": 900})
    for path in (PAGE, f"{PAGE}parameters/MEDIA_MODEL/"):
        page.goto(path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280, f"{path} is {width} px wide at a 1280 px window"


def test_an_operator_adds_orders_and_offers_models_to_the_agent_form(site_db, page):
    agent = _agent(f"Otto {secrets.token_hex(2)}")
    _log_in(page, _staff("curator"), next_url=PAGE)

    page.locator("#add-offered-model").click()
    page.fill("#id_llm_name", "mistral")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errorlist")).to_contain_text('LLM "mistral" is not a known name')

    page.fill("#id_llm_name", "mistralai/mistral-large")
    page.fill("#id_name", "Mistral Large")
    page.check("#id_offered")
    page.fill("#id_position", "2")
    page.fill("#id_input_per_million", "2")
    page.fill("#id_output_per_million", "6")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#offered-models")).to_contain_text("openrouter/mistralai/mistral-large")

    page.locator("#add-offered-model").click()
    page.fill("#id_llm_name", "gpt-4o")
    page.check("#id_offered")
    page.fill("#id_position", "1")
    page.get_by_role("button", name="Save", exact=True).click()
    rows = page.locator("#offered-models tbody tr")
    expect(rows.nth(0)).to_contain_text("gpt-4o")
    expect(rows.nth(1)).to_contain_text("Mistral Large")
    expect(rows.nth(1)).to_contain_text("6.0000")
    price = ModelPrice.objects.get(provider="openrouter", model_prefix="mistralai/mistral-large")
    assert (str(price.input_per_million), str(price.output_per_million)) == ("2.0000", "6.0000")
    assert set(OfferedModel.objects.values_list("source", flat=True)) == {"operator"}
    _shot(page, "models")

    page.goto(f"/admin/agents/agent/{agent.pk}/change/")
    options = page.locator("#agent-llm-choices option")
    assert options.evaluate_all("os => os.map(o => o.value)")[:3] == [
        "gpt-4o",
        "mistralai/mistral-large",
        "gemini",
    ]
