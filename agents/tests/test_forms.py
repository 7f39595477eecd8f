"""The agent form's pickers: real choices, the agent's order kept, nothing it already has dropped."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.forms import AgentForm
from agents.models import Agent, RolePrompt
from media_catalog.models import MediaDescription, StickerSet

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent():
    other = Agent.objects.create(name="Other", phone="+15550009", instructions="x")
    RolePrompt.objects.create(name="Secret", text="other agent's own", agent=other)
    heidi = Agent.objects.create(
        name="Heidi",
        phone="+15550002",
        instructions="Be kind.",
        role_prompt_names=["Think", "Chatbot", "Gone"],
        sticker_set_names=["WendyFaces"],
        explicit_stickers=["WendyFaces::wink"],
    )
    for name in ["Chatbot", "Think", "Roleplay"]:
        RolePrompt.objects.create(name=name, text=f"global {name}")
    RolePrompt.objects.create(name="Chatbot", text="Heidi's own", agent=heidi)
    StickerSet.objects.create(short_name="WendyFaces", title="Wendy's faces")
    MediaDescription.objects.create(
        unique_id="AgADgnome", kind="sticker", sticker_set_name="BrambleGnome", sticker_set_title="Bramble"
    )
    return heidi


def _data(form: AgentForm, **changes) -> dict:
    data = {name: form[name].value() for name in form.fields if form[name].value() not in (None, False)}
    return {**data, **changes}


def test_role_prompts_offer_global_and_own_prompts_in_the_agents_order(agent):
    form = AgentForm(instance=agent)
    choices = form.fields["role_prompt_names"].choices
    assert choices == [
        ("Think", "Think (global)"),
        ("Chatbot", "Chatbot (own)"),
        ("Gone", "Gone (no such prompt yet)"),
        ("Roleplay", "Roleplay (global)"),
    ]
    assert "Secret" not in dict(choices)  # another agent's own prompt


def test_sticker_sets_offer_imported_and_described_sets(agent):
    choices = dict(AgentForm(instance=agent).fields["sticker_set_names"].choices)
    assert choices == {"WendyFaces": "WendyFaces · Wendy's faces", "BrambleGnome": "BrambleGnome · Bramble"}


def test_saving_keeps_order_and_values_without_a_choice(agent):
    form = AgentForm(instance=agent)
    data = _data(
        form,
        role_prompt_names=["Think", "Chatbot", "Gone", "Roleplay"],
        sticker_set_names=["WendyFaces", "BrambleGnome"],
        explicit_stickers="WendyFaces::wink\n\n  BrambleGnome::🍄  \n",
    )
    bound = AgentForm(data, instance=agent)
    assert bound.is_valid(), bound.errors
    saved = bound.save()
    assert saved.role_prompt_names == ["Think", "Chatbot", "Gone", "Roleplay"]
    assert saved.sticker_set_names == ["WendyFaces", "BrambleGnome"]
    assert saved.explicit_stickers == ["WendyFaces::wink", "BrambleGnome::🍄"]


def test_a_sticker_line_without_set_and_name_names_the_line_and_the_fix(agent):
    data = _data(AgentForm(instance=agent), explicit_stickers="WendyFaces::wink\nwink")
    bound = AgentForm(data, instance=agent)
    assert not bound.is_valid()
    assert bound.errors["explicit_stickers"] == [
        'line 2, "wink": write each sticker as SET::NAME, e.g. WendyFaces::wink'
    ]


def test_admin_change_page_shows_pickers_and_the_llm_label(verified_client, agent):
    page = verified_client.get(reverse("admin:agents_agent_change", args=[agent.pk])).content.decode()
    assert 'type="checkbox" name="role_prompt_names" value="Think"' in page
    assert 'name="sticker_set_names" value="BrambleGnome"' in page
    assert ">\nWendyFaces::wink</textarea>" in page
    assert '<label for="id_llm">LLM:</label>' in page
    assert "[&quot;" not in page  # no list shown as JSON


def test_the_always_included_instructions_prompt_is_not_offered_but_kept(agent):
    RolePrompt.objects.create(name="Instructions", text="global response format")
    assert "Instructions" not in dict(AgentForm(instance=agent).fields["role_prompt_names"].choices)

    Agent.objects.filter(pk=agent.pk).update(role_prompt_names=["Instructions", "Think", "Chatbot"])
    agent.refresh_from_db()
    form = AgentForm(instance=agent)
    assert "Instructions" not in dict(form.fields["role_prompt_names"].choices)
    bound = AgentForm(_data(form), instance=agent)
    assert bound.is_valid(), bound.errors
    assert bound.save().role_prompt_names == ["Instructions", "Think", "Chatbot"]


def test_other_sections_and_flag_notes_are_written_as_headed_texts(agent):
    Agent.objects.filter(pk=agent.pk).update(
        extra_sections=[["Mood Board", "Sunny.\n\nWith puns."], ["Motto", "Look it up."]],
        flag_notes={"Gagged": "Quiet until the launch."},
    )
    agent.refresh_from_db()
    form = AgentForm(instance=agent)
    assert form["extra_sections"].value() == "# Mood Board\nSunny.\n\nWith puns.\n\n# Motto\nLook it up."
    assert form["flag_notes"].value() == "# Gagged\nQuiet until the launch."
    assert AgentForm(instance=Agent(name="New"))["extra_sections"].value() == ""  # not "[]"

    bound = AgentForm(_data(form), instance=agent)
    assert bound.is_valid(), bound.errors
    assert not bound.has_changed()
    saved = bound.save()
    assert saved.extra_sections == [["Mood Board", "Sunny.\n\nWith puns."], ["Motto", "Look it up."]]
    assert saved.flag_notes == {"Gagged": "Quiet until the launch."}

    bad = AgentForm(_data(form, flag_notes="Quiet.\n# Gagged\nyes"), instance=agent)
    assert not bad.is_valid()
    assert bad.errors["flag_notes"] == [
        'line 1, "Quiet.": start with a "# Heading" line, then its text below it'
    ]


def test_the_llm_fallback_is_edited_one_name_per_line_and_checked(agent):
    form = AgentForm(instance=agent)

    bound = AgentForm(_data(form, llm_fallback="gpt-5-mini\n\n  grok  \n"), instance=agent)
    assert bound.is_valid(), bound.errors
    assert bound.save().llm_fallback == ["gpt-5-mini", "grok"]
    assert AgentForm(instance=agent)["llm_fallback"].value() == "gpt-5-mini\ngrok"

    bad = AgentForm(_data(form, llm_fallback="gpt-5-mini\nllama3"), instance=agent)
    assert not bad.is_valid()
    assert 'LLM "llama3" is not a known name' in bad.errors["llm_fallback"][0]
