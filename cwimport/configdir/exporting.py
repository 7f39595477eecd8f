"""Export the database back into one config directory, in the same formats and layout import reads.

    agents/<stem>.md, agents/<stem>/prompts/<P>.md, agents/<stem>/memory/<uid>.json,
    agents/<stem>/docs/<D>.md, prompts/<P>.md, media/<unique id>.json (+ the media file)

`<stem>` is the stem of the file the persona was imported from (its identity), or its name for an
agent made in the admin.

Importing, exporting and importing again gives the same rows, field by field.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from agents.models import Agent, AgentDocument, RolePrompt
from agents.persona import PersonaError, write_persona
from media_catalog.services import curated_io as media_io
from memory.services import curated_io as memory_io
from memory.services.state_io import state_export


class ExportError(ValueError):
    pass


def _safe_name(name: str, what: str) -> str:
    """A name used as a file or folder name must not escape its folder."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ExportError(
            f'{what} "{name}" cannot be a file name: rename it without / or \\ or a leading dot'
        )
    return name


def config_export(*, out_dir: Path) -> Counter:
    """Write every agent, prompt, curated memory and curated media description into `out_dir`.

    Returns how many files of each kind were written. Existing files with the same names are
    overwritten; other files in `out_dir` are left alone.
    """
    counts: Counter = Counter()
    agents_dir = out_dir / "agents"
    agents_dir.mkdir(parents=True, exist_ok=True)
    for agent in Agent.objects.order_by("name"):
        name = _safe_name(agent.config_name or agent.name, "agent")
        try:
            text = write_persona(agent)
        except PersonaError as exc:
            raise ExportError(str(exc)) from exc
        (agents_dir / f"{name}.md").write_text(text, encoding="utf-8")
        counts["persona"] += 1
        for prompt in RolePrompt.objects.filter(agent=agent).order_by("name"):
            _write(agents_dir / name / "prompts" / f"{_safe_name(prompt.name, 'prompt')}.md", prompt.text)
            counts["agent prompt"] += 1
        for partner_id, text in memory_io.curated_memories_export(agent=agent).items():
            _write(agents_dir / name / "memory" / f"{partner_id}.json", text)
            counts["memory"] += 1
        counts["state"] += state_export(agent_id=agent.pk, agent_dir=out_dir / "state" / name)
        for document in AgentDocument.objects.filter(agent=agent).order_by("name"):
            _write(agents_dir / name / "docs" / _safe_name(document.name, "document"), document.content)
            counts["document"] += 1
    for prompt in RolePrompt.objects.filter(agent__isnull=True).order_by("name"):
        _write(out_dir / "prompts" / f"{_safe_name(prompt.name, 'prompt')}.md", prompt.text)
        counts["prompt"] += 1
    counts["media"] += media_io.curated_media_export(out_dir=out_dir / "media")
    return counts


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
