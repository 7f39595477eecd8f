"""Config directories written the way cw-telegram-agent writes them, for the drop-in import tests.

`samples/` is shaped like the original's own samples (Heidi with documents and a memory file, Wendy,
and a persona whose file stem differs from its name); `configdir/` has lower priority and holds a
second `Wendy.md` (shadowed by stem whatever its name), a persona with every kind of invalid optional
value, one persona per LLM name, and media descriptions of every kind in the original's JSON layout.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.tests.configdirs import PNG_BYTES, WEBP_BYTES, write
from cwimport.configdir.importing import ConfigDir

HEIDI = """# Agent Name
Heidi

# Agent Phone
+15550107001

# Agent Timezone
America/Los_Angeles

# LLM
gemini

# Role Prompt
Chatbot
Person

# Agent Sticker Sets
HeidiHearts

# Start Typing Delay
3.5

# Typing Speed
8.0

# Daily Schedule
Heidi is twelve. School on weekdays until mid-afternoon, then piano practice; lights out at nine.

# Agent Instructions
You are Heidi, a cheerful twelve-year-old who lives with her grandfather in the mountains.
Chat with {user} the way a curious kid would: short messages, lots of questions.

## Friends
Read file:Friends.md when someone mentions a friend by name.
"""

HEIDI_FRIENDS = """# Heidi's friends

- Peter looks after the goats and is always hungry.
- Klara writes letters from the city every month.
"""

HEIDI_MEMORY = [
    {"kind": "memory", "created": "2025-11-06", "content": "Wendy gave me a silver locket for my birthday."}
]

WENDY = """# Agent Name
Wendy

# Agent Phone
+15550107002

# LLM
gpt-5-mini

# Role Prompt
Chatbot

# Agent Sticker Sets
WendyDancer

# Agent Stickers
WendyDancer :: 👋
WendyDancer :: 💃

# Start Typing Delay
5.0

# Typing Speed
1000.0

# Telegram ID
7100200300

# Agent Instructions
You are Wendy, a dance teacher who answers in a warm, upbeat voice.
"""

# The stem is "olivia", the name "Olivia Stone": the folder agents/olivia/ belongs to her.
OLIVIA = """# Agent Name
Olivia Stone

# Agent Phone
+1 (555) 010-7003

# Agent Timezone
Europe/London

# LLM
anthropic/claude-sonnet-4.5

# Disabled
Paused while her storyline is rewritten.

# Gagged

# Reset Context On First Message

# Agent Instructions
You are Olivia, a lighthouse keeper who writes long, thoughtful messages.
"""

OLIVIA_MEMORY = {
    "version": 2,
    "memory": [
        {
            "id": "mem-1",
            "kind": "memory",
            "created": "2025-01-15 14:30:00 PST",
            "content": "Asked about the storm last winter.",
            "creation_channel": "Sam",
            "creation_channel_id": None,
        },
        {"kind": "memory", "created": 1736951400, "content": "Prefers tea to coffee."},
        {"kind": "memory", "created": "sometime in spring", "content": "Has a dog called Biscuit."},
    ],
    "updated_by": "admin console",
}

WENDY_OTHER = """# Agent Name
Wendy the Second

# Agent Phone
+15550107009

# Agent Instructions
This Wendy lives in a later directory and loses to samples/agents/Wendy.md.
"""

# Every invalid optional value the original ignores. Each line in QUIRKY_WARNINGS names one warning.
QUIRKY = """# Agent Name
Quincy

# Agent Phone
+15550107004

# Agent Timezone
Mars/Olympus_Mons

# LLM
none

# Telegram ID
1000000000000000000000000000000

# Start Typing Delay
0

# Typing Speed
fast

# Agent Stickers
QuincySet :: 🙂
just a lonely emoji 🙃

# Daily Schedule
Sleeps whenever the mood strikes, usually after midnight.

# Role Prompt
Chatbot

# Role Prompt
Person

# Agent Instructions
You are Quincy, who likes to test the edges of every form.
"""
QUIRKY_WARNINGS = [
    '"Agent Timezone" is "Mars/Olympus_Mons": not an IANA zone; kept as written',
    '"Telegram ID" is "1000000000000000000000000000000": outside 1 to 9223372036854775807',
    '"Start Typing Delay" is "0": outside 1 to 3600; ignored',
    '"Typing Speed" is "fast": not a number; ignored',
    '"Agent Stickers" line "just a lonely emoji 🙃" is not SET :: NAME; the line is skipped',
    '"# Role Prompt" appears more than once; the later section is used',
]

# Every LLM name the original's factory accepts, and the route each takes (None: DEFAULT_AGENT_LLM).
LLM_NAMES = {
    "gemini": ("gemini", "gemini-3-flash-preview"),
    "grok": ("grok", "grok-4-fast-non-reasoning"),
    "gpt": ("openai", "gpt-5-mini"),
    "openai": ("openai", "gpt-5-mini"),
    "gpt-5-mini": ("openai", "gpt-5-mini"),
    "gpt-4o": ("openai", "gpt-4o"),
    "gemini-2.5-flash": ("gemini", "gemini-2.5-flash"),
    "grok-3-mini": ("grok", "grok-3-mini"),
    "anthropic/claude-sonnet-4.5": ("openrouter", "anthropic/claude-sonnet-4.5"),
    "openrouter": ("openrouter", "openrouter/auto"),
    "none": None,
    "": None,
}


def llm_persona(index: int, llm: str) -> str:
    return (
        f"# Agent Name\nModel Tester {index}\n\n# Agent Phone\n+1555020{index:04d}\n\n"
        f"# LLM\n{llm}\n\n# Agent Instructions\nYou try out the model called {llm or 'nothing'}.\n"
    )


def media(**fields) -> str:
    return json.dumps(fields, indent=2, ensure_ascii=False)


# One description per kind the original writes, in its key layout: no unique_id in some, mime_type,
# status, description_retry_count, last_used_at, duration as int, float and null, and unknown keys.
MEDIA = {
    "5109398279530679154": media(
        unique_id="5109398279530679154",
        kind="sticker",
        sticker_set_name="WendyDancer",
        sticker_name="👋",
        description="A cartoon dancer waving with both hands.",
        status="curated",
        ts="2025-11-13T23:05:01.092415+00:00",
        duration=None,
        mime_type="image/webp",
        is_emoji_set=False,
        sticker_set_title="Wendy Dancer",
    ),
    "5109398279530679155": media(
        kind="animated_sticker",
        sticker_set_name="WendyDancer",
        sticker_name="💃",
        description="The dancer spins in a red dress.",
        status="curated",
        mime_type="application/x-tgsticker",
        duration=3,
    ),
    "5109398279530679156": media(
        kind="video_sticker",
        sticker_set_name="WendyDancer",
        sticker_name="🎉",
        description="Confetti falls on the dancer.",
        status="curated",
        mime_type="video/webm",
        duration=2.5,
        last_used_at="2025-12-01T10:00:00+00:00",
    ),
    "4933946236969094022": media(
        description="A lighthouse on a rocky coast at dusk, its lamp just lit.",
        status="curated",
    ),
    "773947703670341876": media(
        unique_id="773947703670341876",
        kind="photo",
        description="A plate of pancakes with blueberries.",
        status="ok",
        description_retry_count=0,
        mime_type="image/png",
        sender_id=6765630192,
        channel_name="Cooking club",
    ),
    "773947703670341877": media(
        kind="gif", description="A cat knocking a cup off a table.", status="curated", duration=4
    ),
    "773947703670341878": media(
        kind="video", description="Waves breaking on a beach.", status="curated", duration=12
    ),
    "773947703670341879": media(
        kind="audio", description="A short piano melody.", status="curated", duration=31
    ),
    "773947703670341880": media(
        kind="voice", description="Someone humming a tune.", status="curated", duration=None
    ),
    "773947703670341881": media(
        kind="document",
        description="A one-page recipe for bread.",
        status="curated",
        mime_type="application/pdf",
    ),
    "773947703670341882": media(
        kind="photo",
        description=None,
        status="not_understood",
        description_retry_count=3,
        mime_type="image/jpeg",
    ),
}
MEDIA_FILES = {"5109398279530679154": ("webp", WEBP_BYTES), "4933946236969094022": ("png", PNG_BYTES)}


def build_original_dirs(tmp_path: Path) -> list[ConfigDir]:
    """`samples` has priority over `configdir`, as in the original's default CINDY_AGENT_CONFIG_PATH."""
    samples, configdir = tmp_path / "samples", tmp_path / "configdir"
    write(samples / "agents" / "Heidi.md", HEIDI)
    write(samples / "agents" / "Heidi" / "docs" / "Friends.md", HEIDI_FRIENDS)
    write(samples / "agents" / "Heidi" / "memory" / "6754281260.json", json.dumps(HEIDI_MEMORY, indent=2))
    write(samples / "agents" / "Wendy.md", WENDY)
    write(samples / "agents" / "olivia.md", OLIVIA)
    write(samples / "agents" / "olivia" / "memory" / "4242.json", json.dumps(OLIVIA_MEMORY, indent=2))
    write(samples / "agents" / "olivia" / "memory" / "4343.json", "[]")
    write(samples / "prompts" / "Chatbot.md", "# Chatbot\n\nKeep the conversation going with a question.\n")
    write(samples / "prompts" / "Person.md", "# Person\n\nYou are a person, never an assistant.\n")

    write(configdir / "agents" / "Wendy.md", WENDY_OTHER)
    write(configdir / "agents" / "quincy.md", QUIRKY)
    for index, llm in enumerate(LLM_NAMES):
        write(configdir / "agents" / f"model-{index:02d}.md", llm_persona(index, llm))
    for unique_id, text in MEDIA.items():
        write(configdir / "media" / f"{unique_id}.json", text)
    for unique_id, (suffix, data) in MEDIA_FILES.items():
        write(configdir / "media" / f"{unique_id}.{suffix}", data)
    return [ConfigDir("samples", samples.resolve()), ConfigDir("configdir", configdir.resolve())]
