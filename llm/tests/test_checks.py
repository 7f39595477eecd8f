from __future__ import annotations

from pathlib import Path

from django.conf import settings as django_settings

from llm.checks import check_image_model, check_llm_call_fits_worker_timeout, check_llm_names


def test_unknown_agent_llm_is_reported(agent, dm):
    agent.llm = "banana-9"
    agent.save()
    dm.llm_model = "openai:"
    dm.save()

    errors = check_llm_names(None)

    assert [e.id for e in errors] == ["cindy.E102", "cindy.E103"]
    assert "agent Wendy" in errors[0].msg and "banana-9" in errors[0].msg


def test_known_names_pass(agent, settings):
    agent.llm = "openrouter:meta/llama"
    agent.save()

    assert check_llm_names(None) == []


def test_bad_default_and_media_model_are_reported(db, settings):
    settings.DEFAULT_AGENT_LLM = "nope"
    settings.MEDIA_MODEL = "also-nope"

    assert [e.id for e in check_llm_names(None)] == ["cindy.E101", "cindy.E101"]


def test_a_bad_transcription_model_is_reported_and_an_empty_one_is_fine(db, settings):
    settings.TRANSCRIPTION_MODEL = ""
    assert check_llm_names(None) == []

    settings.TRANSCRIPTION_MODEL = "wisper"
    [error] = check_llm_names(None)
    assert error.id == "cindy.E101" and error.msg.startswith(
        'TRANSCRIPTION_MODEL: LLM "wisper" is not a known name'
    )


def test_llm_retries_longer_than_the_worker_timeout_warn(settings):
    settings.LLM_TIMEOUT_SECONDS = 120.0
    settings.LLM_MAX_RETRIES = 4
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300}

    warnings = check_llm_call_fits_worker_timeout(None)

    assert [w.id for w in warnings] == ["cindy.W104"]
    assert "600 s is more than CINDY_Q_TIMEOUT (300 s)" in warnings[0].msg
    assert "LLM_TIMEOUT_SECONDS" in warnings[0].hint


def test_llm_retries_within_the_worker_timeout_pass(settings):
    settings.LLM_TIMEOUT_SECONDS = 60.0
    settings.LLM_MAX_RETRIES = 4
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 300}

    assert check_llm_call_fits_worker_timeout(None) == []


def test_the_example_configuration_does_not_warn():
    lines = (Path(django_settings.BASE_DIR) / ".env.example").read_text().splitlines()
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))

    worst = float(values["LLM_TIMEOUT_SECONDS"]) * (int(values["LLM_MAX_RETRIES"]) + 1)
    assert worst <= int(values["CINDY_Q_TIMEOUT"])


def test_an_image_model_that_is_not_gemini_is_reported(settings):
    settings.CINDY_IMAGE_MODEL = "gpt-5-mini"
    (error,) = check_image_model(None)
    assert error.id == "cindy.E111" and "Gemini image models only" in error.msg
    settings.CINDY_IMAGE_MODEL = "gemini-2.5-flash-image"
    assert check_image_model(None) == []


def test_an_unknown_site_fallback_name_is_reported(db, settings):
    settings.CINDY_LLM_FALLBACK = ["gpt-5-mini", "llama3"]

    errors = check_llm_names(None)

    assert [e.id for e in errors] == ["cindy.E105"]
    assert 'CINDY_LLM_FALLBACK: "llama3"' in errors[0].msg
