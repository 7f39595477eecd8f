"""OpenRouter's model list: fetched with httpx from a server speaking `/api/v1/models`, cached as rows,
and shown on the admin's "LLMs and prices" page."""

from __future__ import annotations

from decimal import Decimal

import pytest

from conversations.models import ActivityEvent, ModelPrice, OfferedModel
from llm.offered import (
    OfferedModelsError,
    openrouter_models_refresh,
    openrouter_models_refresh_task,
    parse_openrouter_models,
)

pytestmark = pytest.mark.django_db

MODELS = [
    {
        "id": "anthropic/claude-sonnet-4",
        "name": "Anthropic: Claude Sonnet 4",
        "context_length": 200000,
        "pricing": {"prompt": "0.000003", "completion": "0.000015"},
    },
    {"id": "openrouter/auto", "name": "Auto Router", "pricing": {"prompt": "-1", "completion": "-1"}},
    {"name": "no id, skipped"},
]


def test_refresh_fetches_the_list_with_the_key_and_stores_prices_per_million(fake_llm, clock):
    fake_llm.models = MODELS

    assert openrouter_models_refresh() == 2

    request = fake_llm.requests[-1]
    assert (request.method, request.path) == ("GET", "/v1/models")
    assert request.headers["authorization"] == "Bearer test"
    claude = OfferedModel.objects.get(model="anthropic/claude-sonnet-4")
    assert (claude.input_per_million, claude.output_per_million, claude.context_length) == (
        Decimal("3.0000"),
        Decimal("15.0000"),
        200000,
    )
    auto = OfferedModel.objects.get(model="openrouter/auto")
    assert (auto.input_per_million, auto.output_per_million) == (None, None)


def test_a_refresh_replaces_models_that_are_gone(fake_llm, clock):
    fake_llm.models = MODELS
    openrouter_models_refresh()
    fake_llm.models = MODELS[:1]

    openrouter_models_refresh()

    assert list(OfferedModel.objects.values_list("model", flat=True)) == ["anthropic/claude-sonnet-4"]


def test_a_failed_fetch_keeps_the_cached_list_and_says_why(fake_llm, clock, settings):
    fake_llm.models = MODELS
    openrouter_models_refresh()
    settings.OPENROUTER_BASE_URL = "http://127.0.0.1:9/api/v1"  # nothing listens there

    assert "failed" in openrouter_models_refresh_task()

    assert OfferedModel.objects.count() == 2
    assert "OpenRouter model list not refreshed: GET " in ActivityEvent.objects.get().summary


def test_without_a_key_nothing_is_fetched(settings):
    settings.OPENROUTER_API_KEY = ""
    with pytest.raises(OfferedModelsError, match="OPENROUTER_API_KEY is not set"):
        openrouter_models_refresh()


def test_a_reply_without_a_data_list_is_refused():
    with pytest.raises(OfferedModelsError, match='no "data" list'):
        parse_openrouter_models({"models": []})


def test_the_llm_page_lists_parameters_routes_prices_and_offered_models(
    verified_client, fake_llm, clock, django_assert_max_num_queries
):
    fake_llm.models = MODELS
    openrouter_models_refresh()
    ModelPrice.objects.update_or_create(
        provider="gemini",
        model_prefix="gemini-3-flash",
        defaults={"input_per_million": Decimal("0.5"), "output_per_million": Decimal("3")},
    )

    with django_assert_max_num_queries(25):
        response = verified_client.get("/admin/conversations/offeredmodel/")
    html = response.content.decode()

    assert "DEFAULT_AGENT_LLM" in html and "GOOGLE_GEMINI_API_KEY" in html
    assert "gemini/gemini-3-flash-preview" in html
    assert "openrouter:anthropic/claude-sonnet-4" in html and "15.0000" in html
    assert "varies" in html
    assert "2 models on offer" in html
    assert "test" not in html.split("llm-parameters")[1].split("</dl>")[0]  # keys are never shown


def test_the_llm_page_without_an_openrouter_key_says_how_to_get_the_list(verified_client, settings):
    settings.OPENROUTER_API_KEY = ""
    html = verified_client.get("/admin/conversations/offeredmodel/").content.decode()
    assert "Set <code>OPENROUTER_API_KEY</code> to list OpenRouter" in html


def test_the_llm_page_shows_the_image_model_and_its_image_output_price(verified_client, settings):
    settings.CINDY_IMAGE_MODEL = "gemini-2.5-flash-image"
    html = verified_client.get("/admin/conversations/offeredmodel/").content.decode()

    parameters = html.split('id="llm-parameters"')[1].split("</dl>")[0]
    assert "CINDY_IMAGE_MODEL" in parameters and "CINDY_IMAGES_PER_DAY" in parameters
    route = html.split("<code>gemini-2.5-flash-image</code>")[1].split("</tr>")[0]
    assert "gemini/gemini-2.5-flash-image" in route and "30.0000" in route
    prices = html.split('id="llm-prices"')[1].split("</table>")[0]
    row = prices.split(">gemini-2.5-flash-image<")[1].split("</tr>")[0]
    assert "2.5000" in row and "30.0000" in row
