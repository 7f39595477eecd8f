from __future__ import annotations

import pytest

from agents.persona import (
    MAX_SECTION_CHARS,
    PERSONA_FIELDS,
    Persona,
    PersonaError,
    parse_persona,
    write_persona,
)

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
60.5

# Telegram ID
987654321

# Disabled

# Gagged
Quiet until the launch.

# Reset Context On First Message

# Clear Summaries On First Message

# Answer Bots

# Favourite Colour
Green, obviously.

# Agent Instructions
You are Heidi. Greet {user} warmly.

## Style
Short messages.
"""


def minimal(**sections: str | None) -> str:
    base = {"Agent Name": "Heidi", "Agent Phone": "+15551234567", "Agent Instructions": "Be kind to {user}."}
    base.update(sections)
    return "".join(f"# {heading}\n{body}\n\n" for heading, body in base.items() if body is not None)


def error_of(text: str) -> str:
    with pytest.raises(PersonaError) as info:
        parse_persona(text, source=SRC)
    assert len(info.value.errors) == 1, info.value.errors
    return info.value.errors[0]


def only_warning(persona: Persona) -> str:
    assert len(persona.warnings) == 1, persona.warnings
    return persona.warnings[0]


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
    assert (p.start_typing_delay, p.typing_speed, p.telegram_id) == (4.0, 60.5, 987654321)
    assert p.disabled and p.gagged and p.reset_context_on_first_message and p.clear_summaries_on_first_message
    assert p.answer_bots
    assert p.flag_notes == {"Gagged": "Quiet until the launch."}
    assert p.extra_sections == [["Favourite Colour", "Green, obviously."]]
    assert p.instructions == "You are Heidi. Greet {user} warmly.\n\n## Style\nShort messages."


def test_unknown_heading_is_kept_and_reported_as_a_warning():
    p = parse_persona(FULL, source=SRC)
    assert only_warning(p).startswith(f'{SRC}: unknown heading "Favourite Colour"')


def test_a_misspelt_optional_heading_gets_a_did_you_mean_warning_and_is_kept():
    p = parse_persona(minimal(**{"Role Promt": "Chatbot"}), source=SRC)
    assert only_warning(p) == (
        f'{SRC}: unknown heading "# Role Promt": did you mean "# Role Prompt"? It is kept (and written '
        'back on export) but not used: write "# Role Prompt"'
    )
    assert p.role_prompt_names == []
    assert p.extra_sections == [["Role Promt", "Chatbot"]]
    assert "# Role Promt\n\nChatbot" in write_persona(p)


def test_a_misspelt_required_heading_names_the_heading_it_was_meant_to_be():
    text = minimal(**{"Agent Instructions": None, "Agent Instrutions": "Be kind."})
    assert error_of(text) == (
        f'{SRC}: "Agent Instructions" is missing (the file has "# Agent Instrutions": did you mean '
        '"# Agent Instructions"?): add a "# Agent Instructions" section'
    )


def test_crlf_file_parses_like_lf():
    assert parse_persona(FULL.replace("\n", "\r\n"), source=SRC) == parse_persona(FULL, source=SRC)


def test_a_byte_order_mark_does_not_hide_the_first_heading():
    assert parse_persona("\ufeff" + minimal(), source=SRC).name == "Heidi"


def test_optional_fields_default_when_absent():
    p = parse_persona(minimal(), source=SRC)
    assert p == Persona(name="Heidi", phone="+15551234567", instructions="Be kind to {user}.")
    assert p.warnings == []


def test_write_then_parse_gives_the_same_persona_field_by_field():
    original = parse_persona(FULL, source=SRC)
    again = parse_persona(write_persona(original), source=SRC)
    for name in PERSONA_FIELDS:
        assert getattr(again, name) == getattr(original, name), name
    assert write_persona(again) == write_persona(original)


def test_flag_text_is_written_back_under_its_heading():
    text = write_persona(parse_persona(FULL, source=SRC))
    assert "# Gagged\n\nQuiet until the launch.\n" in text
    assert "# Disabled\n\n# Gagged" in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("3.5", 3.5),
        ("8.0", 8.0),
        ("5.0", 5.0),
        ("1000.0", 1000.0),
        ("1", 1.0),
        (" 2 ", 2.0),
        ("3600", 3600.0),
    ],
)
def test_typing_values_are_floats(value, expected):
    p = parse_persona(
        minimal(**{"Start Typing Delay": value, "Typing Speed": value if expected <= 1000 else None}),
        source=SRC,
    )
    assert p.start_typing_delay == expected
    assert isinstance(p.start_typing_delay, float)
    assert p.warnings == []


def test_typing_values_are_written_without_a_needless_fraction():
    p = parse_persona(minimal(**{"Start Typing Delay": "5.0", "Typing Speed": "8.25"}), source=SRC)
    text = write_persona(p)
    assert "# Start Typing Delay\n\n5\n" in text and "# Typing Speed\n\n8.25\n" in text


@pytest.mark.parametrize(
    ("heading", "value", "expected"),
    [
        ("Start Typing Delay", "0", '"Start Typing Delay" is "0": outside 1 to 3600; ignored'),
        ("Start Typing Delay", "3601", '"Start Typing Delay" is "3601": outside 1 to 3600; ignored'),
        ("Start Typing Delay", "inf", '"Start Typing Delay" is "inf": outside 1 to 3600; ignored'),
        ("Start Typing Delay", "nan", '"Start Typing Delay" is "nan": outside 1 to 3600; ignored'),
        ("Typing Speed", "fast", '"Typing Speed" is "fast": not a number; ignored'),
        ("Typing Speed", "1001", '"Typing Speed" is "1001": outside 1 to 1000; ignored'),
        ("Typing Speed", "0", '"Typing Speed" is "0": outside 1 to 1000; ignored'),
        ("Telegram ID", "@heidi", '"Telegram ID" is "@heidi": not a whole number; ignored'),
        ("Telegram ID", "1" + "0" * 30, '"Telegram ID" is "1000000000000000000000000000000": outside 1 to'),
        ("LLM", "nosuch-9", '"LLM" is "nosuch-9": LLM "nosuch-9" is not a known name'),
        ("LLM", "openai:", '"LLM" is "openai:": LLM "openai:": no model after "openai:"'),
        (
            "Agent Stickers",
            "HeidiSet 👋",
            '"Agent Stickers" line "HeidiSet 👋" is not SET :: NAME; the line is skipped',
        ),
        (
            "Agent Stickers",
            "HeidiSet::",
            '"Agent Stickers" line "HeidiSet::" is not SET :: NAME; the line is skipped',
        ),
    ],
)
def test_an_invalid_optional_value_is_ignored_with_a_warning(heading, value, expected):
    p = parse_persona(minimal(**{heading: value}), source=SRC)
    assert only_warning(p).startswith(f"{SRC}: {expected}")
    assert (p.start_typing_delay, p.typing_speed, p.telegram_id, p.llm, p.explicit_stickers) == (
        None,
        None,
        None,
        "",
        [],
    )


def test_a_malformed_sticker_line_is_skipped_and_the_others_kept():
    # The original's own test: "SET :: NAME" with spaces, and a malformed line in between.
    body = "WendyDancer :: Wink\nMalformed line that should be ignored\n  CINDYAI ::  HeartEyes"
    p = parse_persona(minimal(**{"Agent Stickers": body}), source=SRC)
    assert p.explicit_stickers == ["WendyDancer::Wink", "CINDYAI::HeartEyes"]
    assert "Malformed line" in only_warning(p)


def test_an_unknown_timezone_is_kept_as_written_with_a_warning():
    p = parse_persona(minimal(**{"Agent Timezone": "Mars/Base"}), source=SRC)
    assert p.timezone == "Mars/Base"
    assert only_warning(p).startswith(
        f'{SRC}: "Agent Timezone" is "Mars/Base": not an IANA zone; kept as written'
    )


@pytest.mark.parametrize("heading", ["Agent Timezone", "LLM", "Telegram ID", "Typing Speed"])
@pytest.mark.parametrize("value", ["none", "None", "null", "NULL"])
def test_none_and_null_mean_not_set(heading, value):
    p = parse_persona(minimal(**{heading: value}), source=SRC)
    assert (p.timezone, p.llm, p.telegram_id, p.typing_speed) == ("", "", None, None)
    assert p.warnings == []


def test_a_free_prose_daily_schedule_is_kept():
    p = parse_persona(
        minimal(**{"Daily Schedule": "Up with the sun, asleep by ten most nights."}), source=SRC
    )
    assert p.daily_schedule == "Up with the sun, asleep by ten most nights."
    assert p.warnings == []


@pytest.mark.parametrize("heading", ["Agent Name", "Agent Phone", "Agent Instructions"])
def test_missing_required_field_is_an_error(heading):
    assert (
        error_of(minimal(**{heading: None})) == f'{SRC}: "{heading}" is missing: add a "# {heading}" section'
    )


def test_role_prompt_is_optional():
    assert parse_persona(minimal(), source=SRC).role_prompt_names == []


def test_empty_required_field_is_an_error():
    assert error_of(minimal(**{"Agent Instructions": ""})).startswith(f'{SRC}: "Agent Instructions" is empty')


@pytest.mark.parametrize(
    ("heading", "value", "expected"),
    [
        ("Agent Phone", "call me", '"Agent Phone" is "call me": not a phone number'),
        ("Agent Name", "Heidi\nKlum", '"Agent Name" is "Heidi Klum": spans several lines'),
        ("Agent Name", "Hei\x00di", '"Agent Name" contains the control character U+0000: remove it'),
        ("Agent Phone", "+1" + "5" * 40, '"Agent Phone" is "+1555'),
    ],
)
def test_bad_required_values_are_errors_naming_the_field_and_value(heading, value, expected):
    assert error_of(minimal(**{heading: value})).startswith(f"{SRC}: {expected}")


def test_huge_instructions_are_refused_with_the_limit_and_the_reason():
    message = error_of(minimal(**{"Agent Instructions": "x" * (MAX_SECTION_CHARS + 1)}))
    assert f"at most {MAX_SECTION_CHARS:,} are accepted" in message
    assert "every LLM request" in message


def test_a_name_with_a_slash_is_accepted_since_the_file_stem_names_the_folder():
    assert parse_persona(minimal(**{"Agent Name": "Heidi/Klum"}), source=SRC).name == "Heidi/Klum"


def test_a_duplicate_heading_lets_the_later_section_win_with_a_warning():
    p = parse_persona(minimal() + "# Agent Name\nOther\n", source=SRC)
    assert p.name == "Other"
    assert only_warning(p) == (
        f'{SRC}: "# Agent Name" appears more than once; the later section is used: keep a single section'
    )


def test_every_problem_is_reported_at_once():
    with pytest.raises(PersonaError) as info:
        parse_persona("# Agent Name\nHeidi\n# Agent Phone\ncall me\n", source=SRC)
    assert len(info.value.errors) == 2  # bad phone, no instructions


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        ("# agent timezone", '"# agent timezone" is not "# Agent Timezone"'),
        ("# Agent   Timezone", '"# Agent   Timezone" is not "# Agent Timezone"'),
        ("# Agent Timezone #", '"# Agent Timezone #" is not "# Agent Timezone"'),
    ],
)
def test_headings_must_match_exactly_as_in_the_original(line, hint):
    p = parse_persona(minimal() + f"{line}\nAsia/Tokyo\n", source=SRC)
    assert p.timezone == ""
    assert hint in only_warning(p)


def test_a_tab_after_the_hash_does_not_make_a_heading():
    p = parse_persona(minimal(**{"Agent Instructions": "Hello.\n#\tnot a heading"}), source=SRC)
    assert p.instructions == "Hello.\n#\tnot a heading"


def test_a_heading_inside_a_code_block_still_starts_a_section_with_a_warning():
    text = minimal(**{"Agent Instructions": "Quote this:\n```markdown\n# Inner\n```"})
    p = parse_persona(text, source=SRC)
    assert p.instructions == "Quote this:\n```markdown"
    assert p.extra_sections == [["Inner", "```"]]
    assert p.warnings[0].startswith(f'{SRC}: the line "# Inner" is inside a code block but still starts')


def test_the_first_instruction_line_loses_its_indentation_as_in_the_original():
    p = parse_persona(minimal(**{"Agent Instructions": "    indented first line\n    second"}), source=SRC)
    assert p.instructions == "indented first line\n    second"


def test_text_before_the_first_heading_is_reported():
    p = parse_persona("Some notes\n" + minimal(), source=SRC)
    assert only_warning(p).startswith(f"{SRC}: text before the first heading is ignored")


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
        "make it a subheading (## ...)"
    ]


def test_original_parser_cases_read_the_same():
    # Cases from cw-telegram-agent's own register_agents tests: blank lines around list items,
    # subheadings kept in order, and the Disabled flag.
    text = (
        "# Agent Name\nOlivia\n\n# Agent Phone\n+19998887777\n\n# Agent Sticker Sets\n\n   OLIVIAAI\n\n"
        "# Agent Instructions\n\nYou are Olivia.\n\n## Scenario\n\nA church.\n\n## First Message\n\nWelcome!\n\n"
        "# Role Prompt\nOliviaRole\n\n# Agent Stickers\n\n  OLIVIAAI ::  Smile\n\n# Disabled\n"
    )
    p = parse_persona(text, source=SRC)
    assert p.sticker_set_names == ["OLIVIAAI"]
    assert p.explicit_stickers == ["OLIVIAAI::Smile"]
    assert p.role_prompt_names == ["OliviaRole"]
    assert p.instructions == "You are Olivia.\n\n## Scenario\n\nA church.\n\n## First Message\n\nWelcome!"
    assert p.disabled is True
    assert p.warnings == []


def test_spend_limits_are_read_and_a_bad_line_is_ignored_with_a_warning():
    from decimal import Decimal

    from agents.persona import parse_persona, write_persona

    text = (
        "# Agent Name\nWendy\n\n# Agent Phone\n+15551234567\n\n# Spend Limits\nDaily Cap USD: $0.5\n"
        "Turns Per Partner Per Day: many\nTurns Per Partner Per Minute: 2\n\n# Agent Instructions\nBe kind.\n"
    )
    persona = parse_persona(text, source="agents/Wendy.md")
    assert (persona.daily_spend_cap, persona.partner_turns_per_minute, persona.partner_turns_per_day) == (
        Decimal("0.50"),
        2,
        None,
    )
    assert persona.warnings == [
        'agents/Wendy.md: "Spend Limits" line "Turns Per Partner Per Day: many": not a whole number of '
        "turns of at least 1; ignored: write e.g. 3"
    ]
    assert parse_persona(write_persona(persona)) == persona
