from __future__ import annotations

import pytest

from agents.persona import PERSONA_FIELDS, Persona, PersonaError, parse_persona, write_persona

SRC = "agents/Heidi.md"

FULL = """# Agent Name
Heidi

# Agent Phone
+15551234567

# Agent Timezone
Europe/Paris

# LLM
grok

# Role Prompt
Chatbot
Task-Memory

# Agent Sticker Sets
HeidiSet
OtherSet

# Agent Stickers
HeidiSet::👋
OtherSet :: 🎉

# Daily Schedule
Wakes at 07:00.
  Sleeps at 23:00.

# Start Typing Delay
4

# Typing Speed
60

# Telegram ID
987654321

# Disabled

# Gagged

# Reset Context On First Message

# Clear Summaries On First Message

# Favourite Colour
Green, obviously.

# Agent Instructions
You are Heidi. Greet {user} warmly.

## Style
Short messages.

```markdown
# Not a heading, this is inside a fence
```
"""


def minimal(**sections: str) -> str:
    base = {"Agent Name": "Heidi", "Agent Phone": "+15551234567", "Agent Instructions": "Be kind to {user}."}
    base.update(sections)
    return "".join(f"# {heading}\n{body}\n\n" for heading, body in base.items() if body is not None)


def error_of(text: str) -> str:
    with pytest.raises(PersonaError) as info:
        parse_persona(text, source=SRC)
    assert len(info.value.errors) == 1, info.value.errors
    return info.value.errors[0]


def test_every_field_is_parsed():
    p = parse_persona(FULL, source=SRC)
    assert p.name == "Heidi"
    assert p.phone == "+15551234567"
    assert p.timezone == "Europe/Paris"
    assert p.llm == "grok"
    assert p.role_prompt_names == ["Chatbot", "Task-Memory"]
    assert p.sticker_set_names == ["HeidiSet", "OtherSet"]
    assert p.explicit_stickers == ["HeidiSet::👋", "OtherSet::🎉"]
    assert p.daily_schedule == "Wakes at 07:00.\n  Sleeps at 23:00."
    assert (p.start_typing_delay, p.typing_speed, p.telegram_id) == (4, 60, 987654321)
    assert p.disabled and p.gagged and p.reset_context_on_first_message and p.clear_summaries_on_first_message
    assert p.extra_sections == [["Favourite Colour", "Green, obviously."]]


def test_instructions_keep_subheadings_templates_and_fenced_level_one_lines():
    p = parse_persona(FULL, source=SRC)
    assert p.instructions.startswith("You are Heidi. Greet {user} warmly.\n\n## Style\nShort messages.")
    assert "# Not a heading, this is inside a fence" in p.instructions
    assert p.instructions.endswith("```")


def test_unknown_heading_is_kept_and_reported_as_a_warning():
    p = parse_persona(FULL, source=SRC)
    assert len(p.warnings) == 1
    assert p.warnings[0].startswith(f'{SRC}: unknown heading "Favourite Colour"')


def test_crlf_file_parses_like_lf():
    assert parse_persona(FULL.replace("\n", "\r\n"), source=SRC) == parse_persona(FULL, source=SRC)


def test_optional_fields_default_when_absent():
    p = parse_persona(minimal(), source=SRC)
    assert p == Persona(name="Heidi", phone="+15551234567", instructions="Be kind to {user}.")
    assert p.warnings == []


def test_write_then_parse_gives_the_same_persona_field_by_field():
    original = parse_persona(FULL, source=SRC)
    again = parse_persona(write_persona(original), source=SRC)
    for name in PERSONA_FIELDS:
        assert getattr(again, name) == getattr(original, name), name


def test_timezone_error_names_file_heading_value_and_fix():
    assert error_of(minimal(**{"Agent Timezone": "Mars/Base"})) == (
        f'{SRC}: "Agent Timezone" is "Mars/Base": not an IANA zone (e.g. Europe/Paris)'
    )


def test_unknown_llm_is_an_import_error():
    message = error_of(minimal(LLM="nosuch-9"))
    assert message.startswith(f'{SRC}: LLM "nosuch-9" is not a known name')
    assert "gemini" in message and "openai:<model>" in message


@pytest.mark.parametrize(
    ("heading", "value", "expected"),
    [
        ("Start Typing Delay", "0", '"Start Typing Delay" is "0": out of range, use 1 to 3600'),
        ("Start Typing Delay", "3601", '"Start Typing Delay" is "3601": out of range, use 1 to 3600'),
        ("Typing Speed", "fast", '"Typing Speed" is "fast": not a whole number'),
        ("Typing Speed", "1001", '"Typing Speed" is "1001": out of range, use 1 to 1000'),
        ("Telegram ID", "@heidi", '"Telegram ID" is "@heidi": not a whole number'),
        ("Agent Stickers", "HeidiSet 👋", '"Agent Stickers" line is "HeidiSet 👋": write SET::NAME'),
        ("Agent Stickers", "HeidiSet::", '"Agent Stickers" line is "HeidiSet::": write SET::NAME'),
        ("Agent Phone", "call me", '"Agent Phone" is "call me": not a phone number'),
        ("Agent Name", "Hei/di", '"Agent Name" is "Hei/di": it names a folder'),
        ("Agent Name", "Heidi\nKlum", '"Agent Name" is "Heidi Klum": spans several lines'),
        ("LLM", "openai:", 'LLM "openai:": no model after "openai:"'),
    ],
)
def test_field_validation_errors_name_the_field_and_value(heading, value, expected):
    assert error_of(minimal(**{heading: value})).startswith(f"{SRC}: {expected}")


@pytest.mark.parametrize("heading", ["Agent Name", "Agent Phone", "Agent Instructions"])
def test_missing_required_field_is_an_error(heading):
    assert (
        error_of(minimal(**{heading: None})) == f'{SRC}: "{heading}" is missing: add a "# {heading}" section'
    )


def test_empty_required_field_is_an_error():
    assert error_of(minimal(**{"Agent Instructions": ""})).startswith(f'{SRC}: "Agent Instructions" is empty')


def test_duplicate_known_heading_is_an_error():
    text = minimal() + "# Agent Name\nOther\n"
    assert (
        error_of(text) == f'{SRC}: "Agent Name" appears more than once: keep a single "# Agent Name" section'
    )


def test_every_problem_is_reported_at_once():
    with pytest.raises(PersonaError) as info:
        parse_persona("# Agent Name\nHeidi\n# Typing Speed\nfast\n", source=SRC)
    assert len(info.value.errors) == 3  # bad typing speed, no phone, no instructions


def test_headings_match_regardless_of_case_and_spacing():
    p = parse_persona(minimal() + "# agent   timezone\nAsia/Tokyo\n", source=SRC)
    assert p.timezone == "Asia/Tokyo"


def test_flag_with_text_still_counts_but_warns():
    p = parse_persona(minimal(Gagged="yes please"), source=SRC)
    assert p.gagged is True
    assert "presence-only flag" in p.warnings[0]


def test_text_before_the_first_heading_is_reported():
    p = parse_persona("Some notes\n" + minimal(), source=SRC)
    assert p.warnings[0].startswith(f"{SRC}: text before the first heading is ignored")


def test_hashtag_without_space_is_not_a_heading():
    p = parse_persona(minimal(**{"Agent Instructions": "Use tags like\n#blessed\nsparingly."}), source=SRC)
    assert p.instructions == "Use tags like\n#blessed\nsparingly."


def test_writer_refuses_a_value_that_would_read_back_differently():
    persona = parse_persona(minimal(), source=SRC)
    persona.instructions = "Intro\n# Sneaky heading\nMore"
    with pytest.raises(PersonaError) as info:
        write_persona(persona)
    assert info.value.errors == [
        'Heidi: "Agent Instructions" has the line "# Sneaky heading", which would start a new section: '
        "make it a subheading (## ...) or put it inside a code block"
    ]
    persona.instructions = "```python\nprint('hi')"
    with pytest.raises(PersonaError, match="opens a code block with ``` and never closes it"):
        write_persona(persona)


def test_unclosed_code_block_in_a_file_is_reported():
    text = minimal(**{"Agent Instructions": "Hi\n```\ncode"}) + "# Gagged\n"
    p = parse_persona(text, source=SRC)
    assert p.gagged is False
    assert p.warnings[0].startswith(f"{SRC}: a code block opened with ``` never closes")


def test_values_longer_than_their_column_are_errors():
    assert error_of(minimal(**{"Agent Phone": "+1" + "5" * 40})).endswith(
        "longer than 32 characters, shorten it"
    )
