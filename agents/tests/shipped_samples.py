"""Config directories shaped like the original's `samples/` and `configdir/` as it ships them.

Three personas share one phone (the original's placeholder number) and are all `# Disabled`; one has a
`docs/` folder, a `Daily Schedule` and the original's task prompts as role prompts; each directory has
a `DefaultAgent.md` template at its top (the original's admin console reads it; it is not a persona)
and `samples/` a README. The texts are written for these tests in the original's formats.
"""

from __future__ import annotations

import json
from pathlib import Path

from agents.tests.configdirs import WEBP_BYTES, write
from cwimport.configdir.importing import ConfigDir

SHARED_PHONE = "+12345678901"

GAMEMASTER = f"""# Agent Name

GameMaster

# Agent Phone

{SHARED_PHONE}

# Reset Context On First Message

Every new quest starts from a blank map.

# Role Prompt

Adventure

# Agent Instructions

You run a text adventure for {{user}}.

## Scenario

A lighthouse keeper has gone missing on a stormy island.

## First Message

"The ferry leaves you on the pier. The lamp above is dark."

# Disabled
"""

HEIDI = f"""# Agent Name

Heidi

# Agent Phone

{SHARED_PHONE}

# Agent Timezone

America/Los_Angeles

# Agent Sticker Sets

GoatPals

# Role Prompt

Task-Memory
Task-Retrieve
Task-Photo
Task-Plan
Person

# Daily Schedule

School on weekdays from eight to three, homework after dinner, lights out at ten.

# Agent Instructions

I'm Heidi, a teenager who reads a lot. More about my friends in `file:Friends.md`.

# Typing Speed

5.0

# Start Typing Delay

8.0

# Disabled
"""

MARTHA = f"""# Agent Name

Martha

# Agent Phone

{SHARED_PHONE}

# Reset Context On First Message

Each visit feels like the first.

# Agent Sticker Sets

TeaTime

# Role Prompt

Roleplay

# Agent Instructions

You are Martha, who keeps the village tea room.

# Start Typing Delay

4.0

# Typing Speed

1000.0

# Disabled
"""

DEFAULT_AGENT = f"""# Agent Name

New Agent

# Agent Phone

{SHARED_PHONE}

# Agent Instructions

Describe the new persona here.

# Role Prompt

Chatbot

# Disabled
"""

FRIENDS = "# Friends\n\nPeter looks after the goats. Klara writes letters from the city.\n"

TASK_SCHEDULE = """<!-- SCHEMA_TASKS: schedule, retrieve -->

# Schedule

Read `file:schedule.json` before changing your schedule; then add, move or delete an activity with a
`schedule` task (`id`, `start_time`, `end_time`, `activity_name`, `responsiveness`, `description`).
"""

TASK_PHOTO = """<!-- SCHEMA_TASKS: send_media, retrieve -->

# Sending media

Send an item of your collection with `send_media` and its `unique_id`. To see what you have, retrieve
`file:media.json`: each item has a `media_id`, a `media_type` and maybe a `description`.
"""

TASK_RETRIEVE = """<!-- SCHEMA_TASKS: retrieve -->

# Retrieving

Fetch a page or one of your files with `{"kind": "retrieve", "urls": [...]}`. Do not retrieve what
is already in your context.
"""

TASK_MEMORY = """<!-- SCHEMA_TASKS: remember -->

# Memory

Keep what matters about people with a `remember` task.
"""

TASK_PLAN = """<!-- SCHEMA_TASKS: plan -->

# Plan

Keep a plan for this conversation with a `plan` task.
"""

RESPONSE_FORMAT = """<!-- SCHEMA_TASKS: send, think, react, sticker, wait -->

# Response Format

Answer with a JSON list of tasks.
"""

STICKER = json.dumps(
    {
        "unique_id": "669159254791291461",
        "kind": "sticker",
        "sticker_set_name": "TeaTime",
        "sticker_name": "👋",
        "description": "A teapot waving its spout.",
        "status": "curated",
    },
    indent=2,
    ensure_ascii=False,
)


def build_shipped_dirs(tmp_path: Path) -> list[ConfigDir]:
    """`samples` then `configdir`, the original's default CINDY_AGENT_CONFIG_PATH order."""
    samples, configdir = tmp_path / "samples", tmp_path / "configdir"
    write(samples / "README.md", "# Samples\n\nExample personas. They all share a placeholder phone.\n")
    write(samples / "DefaultAgent.md", DEFAULT_AGENT)
    write(samples / "agents" / "GameMaster.md", GAMEMASTER)
    write(samples / "agents" / "Heidi.md", HEIDI)
    write(samples / "agents" / "Heidi" / "docs" / "Friends.md", FRIENDS)
    write(samples / "agents" / "Martha.md", MARTHA)
    for name in ("Adventure", "Person", "Roleplay", "Chatbot"):
        write(samples / "prompts" / f"{name}.md", f"# {name}\n\nStay in character as {{character}}.\n")
    write(samples / "media" / "669159254791291461.json", STICKER)
    (samples / "media" / "669159254791291461.webp").write_bytes(WEBP_BYTES)

    write(configdir / "DefaultAgent.md", DEFAULT_AGENT)
    write(configdir / "prompts" / "Instructions.md", RESPONSE_FORMAT)
    write(configdir / "prompts" / "Task-Schedule.md", TASK_SCHEDULE)
    write(configdir / "prompts" / "Task-Photo.md", TASK_PHOTO)
    write(configdir / "prompts" / "Task-Retrieve.md", TASK_RETRIEVE)
    write(configdir / "prompts" / "Task-Memory.md", TASK_MEMORY)
    write(configdir / "prompts" / "Task-Plan.md", TASK_PLAN)
    return [ConfigDir("samples", samples.resolve()), ConfigDir("configdir", configdir.resolve())]
