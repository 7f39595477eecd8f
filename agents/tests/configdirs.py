"""Builds realistic config directories in the original on-disk formats, for import tests."""

from __future__ import annotations

import json
from pathlib import Path

from cwimport.configdir.importing import ConfigDir

HEIDI = """# Agent Name
Heidi

# Agent Phone
+15551230001

# Agent Timezone
Europe/Berlin

# LLM
gemini

# Role Prompt
Chatbot
Memory

# Agent Sticker Sets
HeidiSet

# Agent Stickers
PartySet::🎉

# Daily Schedule
{"weekday": "09:00-22:00"}

# Start Typing Delay
2

# Typing Speed
35

# Telegram ID
555000111

# Gagged

# Answer Bots

# Mood Board
Sunny, with a chance of puns.

# Agent Instructions
You are Heidi. Talk to {user} like an old friend.

## Tone
Warm and brief.
"""

HEIDI_SHADOW = """# Agent Name
Heidi

# Agent Phone
+15551239999

# Agent Instructions
A different Heidi that must lose to the first directory.
"""

CRLF_PERSONA = "# Agent Name\r\nWindows\r\n\r\n# Agent Phone\r\n+15551230002\r\n\r\n# Agent Instructions\r\nHello {user}.\r\n\r\n## Details\r\nWritten on Windows.\r\n"

BROKEN_PERSONA = """# Agent Name
Broken

# Agent Instructions
This persona forgot its phone number.
"""

OTTO = """# Agent Name
Otto

# Agent Phone
+15551230003

# Role Prompt
Chatbot

# Agent Instructions
You are Otto.
"""

HEIDI_MEMORIES = [
    {
        "kind": "memory",
        "created": "2025-01-26 14:30:15 UTC",
        "content": "Has a younger sister named Sarah who studies abroad.",
        "creation_channel": "Alice",
        "creation_channel_id": 123456789,
        "confidence": 0.9,
        "tags": ["family"],
    },
    {
        "kind": "memory",
        "created": "2025-01-26 15:45:22 UTC",
        "content": "Works as a software engineer and hikes on weekends.",
        "creation_channel": "Alice",
        "creation_channel_id": 123456789,
    },
]

# A 1x1 transparent PNG and a few bytes standing in for a WebP sticker.
PNG_BYTES = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
WEBP_BYTES = (
    b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00/\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
)


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_bytes(content.encode("utf-8"))
    return path


def media_json(unique_id: str, description: str, **fields) -> str:
    data = {
        "unique_id": unique_id,
        "kind": "sticker",
        "sticker_set_name": "HeidiSet",
        "sticker_name": "👋",
        "description": description,
        **fields,
    }
    return json.dumps(data, ensure_ascii=False, indent=2)


def build_config_dirs(tmp_path: Path) -> list[ConfigDir]:
    """Two config directories; `one` has priority over `two`.

    one/  agents: Heidi (full, agent Chatbot override, memories with extra fields), Windows (CRLF),
                  Broken (no phone)
          prompts: Memory
          media: U1 (sticker + .webp)
    two/  agents: Heidi (shadowed), Otto
          prompts: Chatbot (global), Memory (shadowed)
          media: U1 (shadowed), U2 (photo + .png, extra fields)
    """
    one, two = tmp_path / "one", tmp_path / "two"
    write(one / "agents" / "Heidi.md", HEIDI)
    write(one / "agents" / "Heidi" / "prompts" / "Chatbot.md", "# Chatbot\n\nHeidi's own chat style.\n")
    write(one / "agents" / "Heidi" / "memory" / "123456789.json", json.dumps(HEIDI_MEMORIES, indent=2))
    write(one / "agents" / "Windows.md", CRLF_PERSONA.encode("utf-8"))
    write(one / "agents" / "Broken.md", BROKEN_PERSONA)
    write(one / "prompts" / "Memory.md", "# Memory\n\nRemember what matters.\n")
    write(one / "media" / "U1.json", media_json("U1", "Heidi waves hello."))
    write(one / "media" / "U1.webp", WEBP_BYTES)

    write(two / "agents" / "Heidi.md", HEIDI_SHADOW)
    write(two / "agents" / "Otto.md", OTTO)
    write(two / "prompts" / "Chatbot.md", "# Chatbot\n\nBe a good chat partner.\n")
    write(two / "prompts" / "Memory.md", "# Memory\n\nThis one loses.\n")
    write(two / "media" / "U1.json", media_json("U1", "The losing description."))
    write(
        two / "media" / "U2.json",
        json.dumps(
            {
                "unique_id": "U2",
                "kind": "photo",
                "description": "A lighthouse at dusk.",
                "mime": "image/png",
                "status": "ok",
                "photographer": "unknown",
            }
        ),
    )
    write(two / "media" / "U2.png", PNG_BYTES)
    return [ConfigDir("one", one.resolve()), ConfigDir("two", two.resolve())]
