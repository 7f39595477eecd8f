"""Global parameters: the environment's value unless the admin stored an override, typed and validated
as the settings module validates the variable, each change audited, read without a query."""

from __future__ import annotations

import logging

import pytest
from django_q.signals import pre_execute

from cindy_site.parameters import NAMES, parameter
from conversations.models import ActivityEvent
from llm.models import SiteParameter
from llm.parameter_store import (
    PARAMETERS,
    ParameterError,
    parameter_reset,
    parameter_set,
    parameters_refresh,
    parse_value,
)
from llm.routing import Route, route_for

pytestmark = pytest.mark.django_db

PAGE = "/admin/llm/offeredmodel/"


def _store(name: str, value: str, clock) -> None:
    """A row written as another process (the web's admin) writes it: this process is not told."""
    SiteParameter.objects.update_or_create(name=name, defaults={"value": value, "updated": clock.now()})


def test_without_an_override_the_setting_is_read_and_costs_no_query(settings, django_assert_num_queries):
    settings.CINDY_HISTORY_SIZE = 42
    settings.DEFAULT_AGENT_LLM = "grok"
    with django_assert_num_queries(0):
        assert parameter("CINDY_HISTORY_SIZE") == 42
        assert route_for() == Route("grok", "grok-4-fast-non-reasoning")


def test_a_stored_override_is_typed_and_wins_after_a_refresh(settings, clock, django_assert_num_queries):
    settings.CINDY_HISTORY_SIZE = 500
    _store("CINDY_HISTORY_SIZE", " 30 ", clock)
    _store("CINDY_READ_DELAY_SECONDS", "0.5", clock)
    assert parameter("CINDY_HISTORY_SIZE") == 500  # not seen until this process reloads

    # One query for the admin's LLM endpoints (llm/endpoint_store.py), one for the overrides.
    with django_assert_num_queries(2):
        parameters_refresh()
    with django_assert_num_queries(0):
        assert parameter("CINDY_HISTORY_SIZE") == 30
        assert parameter("CINDY_READ_DELAY_SECONDS") == 0.5
        assert parameter("RETRIEVAL_MAX_ROUNDS") == settings.RETRIEVAL_MAX_ROUNDS


def test_a_worker_task_starts_with_the_values_stored_now(settings, clock):
    settings.DEFAULT_AGENT_LLM = "gemini"
    _store("DEFAULT_AGENT_LLM", "gpt", clock)

    pre_execute.send(sender="django_q", func=print, task={})  # what a django-q2 worker sends first

    assert route_for() == Route("openai", "gpt-5-mini")
    SiteParameter.objects.all().delete()
    pre_execute.send(sender="django_q", func=print, task={})
    assert route_for() == Route("gemini", "gemini-3-flash-preview")


def test_a_stored_value_that_no_longer_validates_is_ignored_and_named(settings, clock, caplog):
    settings.CINDY_HISTORY_SIZE = 500
    _store("CINDY_HISTORY_SIZE", "0", clock)
    with caplog.at_level(logging.WARNING, logger="cindy_site.parameters"):
        parameters_refresh()
    assert parameter("CINDY_HISTORY_SIZE") == 500
    assert "CINDY_HISTORY_SIZE is 0: it must be at least 1" in caplog.text


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("DEFAULT_AGENT_LLM", "llama", 'DEFAULT_AGENT_LLM: LLM "llama" is not a known name: use gemini'),
        ("DEFAULT_AGENT_LLM", "", "DEFAULT_AGENT_LLM is empty: give an LLM name"),
        ("MEDIA_MODEL", "openai:", 'MEDIA_MODEL: LLM "openai:": no model after "openai:"'),
        ("CINDY_IMAGE_MODEL", "gpt-5-mini", 'CINDY_IMAGE_MODEL is "gpt-5-mini": pictures are made by Gemini'),
        ("CINDY_HISTORY_SIZE", "0", "CINDY_HISTORY_SIZE is 0: it must be at least 1"),
        ("CINDY_HISTORY_SIZE", "many", 'CINDY_HISTORY_SIZE is "many": it must be a whole number, at least 1'),
        ("CINDY_READ_DELAY_SECONDS", "-1", "CINDY_READ_DELAY_SECONDS is -1: it must be a number of seconds"),
        ("MEDIA_DESC_BUDGET_PER_TICK", "-2", "MEDIA_DESC_BUDGET_PER_TICK is -2: it must be at least 0"),
        (
            "GOOGLE_GEMINI_API_KEY",
            "x",
            '"GOOGLE_GEMINI_API_KEY" is not a global parameter: the admin can set',
        ),
    ],
)
def test_a_bad_value_names_the_parameter_the_value_and_the_fix(name, raw, message):
    with pytest.raises(ParameterError) as error:
        parse_value(name, raw)
    assert str(error.value).startswith(message)


def test_optional_models_accept_empty_and_no_secret_is_a_parameter():
    assert parse_value("TRANSLATION_MODEL", "") == ""
    assert parse_value("TRANSCRIPTION_MODEL", " gpt-4o-mini-transcribe ") == "gpt-4o-mini-transcribe"
    assert tuple(PARAMETERS) == NAMES
    assert not [n for n in PARAMETERS if "KEY" in n or "TOKEN" in n or "SECRET" in n or "URL" in n]


def test_every_change_is_audited_with_who_the_old_and_the_new_value(settings, clock):
    settings.CINDY_HISTORY_SIZE = 500

    parameter_set("CINDY_HISTORY_SIZE", "40", by="ops")
    parameter_set("CINDY_HISTORY_SIZE", "40", by="ops")  # no change, no entry
    parameter_set("CINDY_HISTORY_SIZE", "60", by="lead")
    assert parameter("CINDY_HISTORY_SIZE") == 60
    assert parameter_reset("CINDY_HISTORY_SIZE", by="ops") is True
    assert parameter_reset("CINDY_HISTORY_SIZE", by="ops") is False
    assert parameter("CINDY_HISTORY_SIZE") == 500

    events = list(ActivityEvent.objects.filter(kind=ActivityEvent.Kind.INFO).order_by("id"))
    assert [e.summary for e in events] == [
        "Global parameter CINDY_HISTORY_SIZE changed from 500 (environment) to 40 by ops",
        "Global parameter CINDY_HISTORY_SIZE changed from 40 to 60 by lead",
        "Global parameter CINDY_HISTORY_SIZE reset from 60 to the environment's 500 by ops",
    ]
    assert [e.data for e in events] == [
        {"parameter": "CINDY_HISTORY_SIZE", "old": "", "new": "40", "by": "ops"},
        {"parameter": "CINDY_HISTORY_SIZE", "old": "40", "new": "60", "by": "lead"},
        {"parameter": "CINDY_HISTORY_SIZE", "old": "60", "new": "", "by": "ops"},
    ]
    with pytest.raises(ParameterError):
        parameter_set("CINDY_HISTORY_SIZE", "-3", by="ops")
    assert ActivityEvent.objects.count() == 3 and not SiteParameter.objects.exists()


def test_the_llm_page_shows_each_value_and_where_it_comes_from(verified_client, settings, clock):
    settings.RETRIEVAL_MAX_ROUNDS = 8
    _store("CINDY_HISTORY_SIZE", "25", clock)

    html = verified_client.get(PAGE).content.decode()

    history = html.split('id="parameter-CINDY_HISTORY_SIZE"')[1].split("</tr>")[0]
    assert '<td class="value">25</td>' in history and ">admin<" in history
    assert f"{PAGE}parameters/CINDY_HISTORY_SIZE/" in history
    rounds = html.split('id="parameter-RETRIEVAL_MAX_ROUNDS"')[1].split("</tr>")[0]
    assert '<td class="value">8</td>' in rounds and '<td class="source">environment</td>' in rounds


def test_the_admin_form_refuses_a_bad_value_then_saves_and_resets(verified_client, settings, clock):
    settings.DEFAULT_AGENT_LLM = "gemini"
    url = f"{PAGE}parameters/DEFAULT_AGENT_LLM/"
    assert 'value="gemini"' in verified_client.get(url).content.decode()

    html = verified_client.post(url, {"value": "llama"}).content.decode()
    assert "DEFAULT_AGENT_LLM: LLM &quot;llama&quot; is not a known name" in html
    assert not SiteParameter.objects.exists()

    assert verified_client.post(url, {"value": "grok"}).status_code == 302
    assert SiteParameter.objects.get().updated_by == "operator"
    assert route_for() == Route("grok", "grok-4-fast-non-reasoning")

    assert verified_client.post(url, {"reset": "1"}).status_code == 302
    assert route_for() == Route("gemini", "gemini-3-flash-preview")
    assert ActivityEvent.objects.filter(summary__contains="DEFAULT_AGENT_LLM").count() == 2
    assert verified_client.get(f"{PAGE}parameters/SECRET_KEY/").status_code == 404
