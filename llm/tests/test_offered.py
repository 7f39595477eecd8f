"""OpenRouter's model list: fetched with httpx from a server speaking `/api/v1/models`, cached as rows,
and shown on the admin's "LLMs and prices" page."""

from __future__ import annotations

from decimal import Decimal

import pytest

from conversations.models import ActivityEvent
from llm.models import ModelPrice, OfferedModel
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
        response = verified_client.get("/admin/llm/offeredmodel/")
    html = response.content.decode()

    assert "DEFAULT_AGENT_LLM" in html and "GOOGLE_GEMINI_API_KEY" in html
    assert "gemini/gemini-3-flash-preview" in html
    assert "openrouter:anthropic/claude-sonnet-4" in html and "15.0000" in html
    assert "varies" in html
    assert "2 models on offer" in html
    assert "test" not in html.split("llm-parameters")[1].split("</dl>")[0]  # keys are never shown


def test_the_llm_page_without_an_openrouter_key_says_how_to_get_the_list(verified_client, settings):
    settings.OPENROUTER_API_KEY = ""
    html = verified_client.get("/admin/llm/offeredmodel/").content.decode()
    assert "Set <code>OPENROUTER_API_KEY</code> to list OpenRouter" in html


def test_the_llm_page_shows_the_image_model_and_its_image_output_price(verified_client, settings):
    settings.CINDY_IMAGE_MODEL = "gemini-2.5-flash-image"
    html = verified_client.get("/admin/llm/offeredmodel/").content.decode()

    parameters = html.split('id="site-parameters"')[1].split("</table>")[0]
    assert "CINDY_IMAGE_MODEL" in parameters and "CINDY_IMAGES_PER_DAY" in parameters
    route = html.split("<code>gemini-2.5-flash-image</code>")[1].split("</tr>")[0]
    assert "gemini/gemini-2.5-flash-image" in route and "30.0000" in route
    prices = html.split('id="llm-prices"')[1].split("</table>")[0]
    row = prices.split(">gemini-2.5-flash-image<")[1].split("</tr>")[0]
    assert "2.5000" in row and "30.0000" in row


def test_the_llm_page_shows_voice_prices_and_limits(verified_client, settings):
    """Voice in (audio input tokens, minutes of whisper-1), voice out (the speech model's route and
    price) and their limits, beside the pictures' (above)."""
    settings.ELEVENLABS_API_KEY = ""
    settings.CINDY_SPEECH_MODEL = "gemini-2.5-flash-preview-tts"
    html = verified_client.get("/admin/llm/offeredmodel/").content.decode()

    limits = html.split('id="llm-parameters"')[1].split("</dl>")[0]
    assert "Gemini gemini-2.5-flash-preview-tts (CINDY_SPEECH_MODEL)" in limits
    assert "at most 2000 characters" in limits and "up to 5 minutes" in limits
    route = html.split("<code>gemini-2.5-flash-preview-tts</code>")[1].split("</tr>")[0]
    assert "gemini/gemini-2.5-flash-preview-tts" in route and "10.0000" in route
    prices = html.split('id="llm-prices"')[1].split("</table>")[0]
    whisper = prices.split(">whisper-1<")[1].split("</tr>")[0]
    assert "0.0060" in whisper
    flash = prices.split(">gemini-2.5-flash<")[1].split("</tr>")[0]
    assert "1.0000" in flash  # Gemini's audio input rate

    settings.ELEVENLABS_API_KEY = "key"
    html = verified_client.get("/admin/llm/offeredmodel/").content.decode()
    assert "ElevenLabs eleven_multilingual_v2 (ELEVENLABS_API_KEY is set)" in html


def test_a_refresh_keeps_the_rows_an_operator_added_or_edited(fake_llm, clock):
    fake_llm.models = MODELS
    openrouter_models_refresh()
    claude = OfferedModel.objects.get(model="anthropic/claude-sonnet-4")
    claude.source, claude.offered, claude.position, claude.name = (
        OfferedModel.Source.OPERATOR,
        True,
        1,
        "Claude",
    )
    claude.save()
    OfferedModel.objects.create(
        provider="openai", model="gpt-5-mini", llm_name="gpt-5-mini", source=OfferedModel.Source.OPERATOR
    )
    fake_llm.models = MODELS[1:]  # Claude is gone from OpenRouter's list

    assert openrouter_models_refresh() == 1

    kept = OfferedModel.objects.get(model="anthropic/claude-sonnet-4")
    assert (kept.name, kept.offered, kept.position, kept.source) == ("Claude", True, 1, "operator")
    assert OfferedModel.objects.get(model="openrouter/auto").source == OfferedModel.Source.FETCHED
    assert OfferedModel.objects.filter(model="gpt-5-mini").exists()

    fake_llm.models = MODELS  # back in the list: the operator's row is not duplicated nor overwritten
    openrouter_models_refresh()
    assert OfferedModel.objects.get(model="anthropic/claude-sonnet-4").name == "Claude"


def test_an_operator_adds_a_model_validated_by_routing_with_its_price(verified_client, clock):
    url = "/admin/llm/offeredmodel/add/"
    form = {"llm_name": "llama-ish", "name": "", "position": "2", "offered": "on"}
    html = verified_client.post(url, form).content.decode()
    assert "LLM &quot;llama-ish&quot; is not a known name" in html
    assert not OfferedModel.objects.exists()

    form.update(llm_name="openai:gpt-4o-mini", name="GPT-4o mini", input_per_million="0.15")
    html = verified_client.post(url, form).content.decode()
    assert "Give both the input and the output price" in html

    form["output_per_million"] = "0.6"
    assert verified_client.post(url, form).status_code == 302

    row = OfferedModel.objects.get()
    assert (row.provider, row.model, row.source, row.offered, row.position) == (
        "openai",
        "gpt-4o-mini",
        OfferedModel.Source.OPERATOR,
        True,
        2,
    )
    price = ModelPrice.objects.get(provider="openai", model_prefix="gpt-4o-mini")
    assert (price.input_per_million, price.output_per_million) == (Decimal("0.15"), Decimal("0.6"))

    form["llm_name"] = "openai:gpt-4o-mini "  # the same model again: edit that row instead
    html = verified_client.post(url, form).content.decode()
    assert "already listed as" in html and OfferedModel.objects.count() == 1


def test_the_offered_models_lead_the_agent_forms_llm_choices_in_order(verified_client, agent):
    OfferedModel.objects.create(
        provider="openai", model="gpt-4o", llm_name="gpt-4o", offered=True, position=2, source="operator"
    )
    OfferedModel.objects.create(
        provider="openrouter", model="x/first", offered=True, position=1, source="operator"
    )
    OfferedModel.objects.create(provider="openrouter", model="y/not-offered")

    html = verified_client.get(f"/admin/agents/agent/{agent.pk}/change/").content.decode()

    choices = html.split('<datalist id="agent-llm-choices">')[1].split("</datalist>")[0]
    assert choices.index("openrouter:x/first") < choices.index("gpt-4o") < choices.index('"gemini"')
    assert choices.index('"gemini"') < choices.index("openrouter:y/not-offered")


def test_the_llm_page_lists_the_offered_models_in_order_in_a_fixed_number_of_queries(
    verified_client, clock, django_assert_max_num_queries
):
    for i in range(12):
        OfferedModel.objects.create(
            provider="openrouter", model=f"vendor/model-{i}", offered=True, position=12 - i, source="operator"
        )
    OfferedModel.objects.create(provider="openai", model="bad", llm_name="not-a-route", source="operator")

    with django_assert_max_num_queries(25):
        html = verified_client.get("/admin/llm/offeredmodel/").content.decode()

    table = html.split('id="offered-models"')[1].split("</table>")[0]
    assert table.index("vendor/model-11") < table.index("vendor/model-0")
    assert "LLM &quot;not-a-route&quot; is not a known name" in table
    assert "/admin/llm/offeredmodel/add/" in html
