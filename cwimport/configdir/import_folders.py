"""Import the per-agent folders of config directories: `agents/<stem>/prompts`, `memory` and `docs`.

A folder belongs to the agent whose persona file has the same stem (`agents/Heidi.md` owns
`agents/Heidi/`), as in cw-telegram-agent. Agents imported before stems were recorded, or made in the
admin, are found by name. Priority between config directories is the same as for every other file:
the first valid file wins and later ones are reported as shadowed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

from agents.models import Agent, AgentDocument
from agents.services.curation import MAX_DOCUMENT_CHARS
from cwimport.configdir.import_files import (
    ConfigDir,
    ImportFileError,
    import_prompt,
    list_files,
    read_file,
    run_file,
)
from cwimport.configdir.import_report import FileKind, ImportReport, Outcome
from memory.services import curated_io as memory_io


def agent_for_folder(folder_name: str) -> Agent | None:
    return (
        Agent.objects.filter(config_name=folder_name).first()
        or Agent.objects.filter(name=folder_name, config_name="").first()
    )


def import_agent_folders(dirs: Iterable[ConfigDir], report: ImportReport) -> None:
    winners: dict[tuple[str, str], dict[str, str]] = {}  # (folder, part) -> {file name: winning file}
    for root in dirs:
        agents_dir = root.path / "agents"
        if not agents_dir.is_dir():
            continue
        for folder in sorted(p for p in agents_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            agent = agent_for_folder(folder.name)
            for part, pattern, kind, importer in (
                ("prompts", "*.md", FileKind.AGENT_PROMPT, _agent_prompt),
                ("memory", "*.json", FileKind.MEMORY, _import_memory),
                ("docs", "*.md", FileKind.DOCUMENT, _import_document),
            ):
                for path in list_files(folder / part, pattern):
                    display = root.show(path)
                    folder_winners = winners.setdefault((folder.name, part), {})
                    work = functools.partial(importer, root, path, display, agent, folder, folder_winners)
                    run_file(report, display, kind, work)


def _require(agent: Agent | None, folder: Path, display: str) -> Agent:
    if agent is None:
        raise ImportFileError(
            f'{display}: no agent for the folder "{folder.name}": add agents/{folder.name}.md '
            "(the folder is named after the persona file), or rename the folder after an existing one"
        )
    return agent


def _shadowed(winners: dict[str, str], key: str, what: str) -> tuple | None:
    if key in winners:
        return Outcome.SHADOWED, f"{what} comes from {winners[key]}"
    return None


def _agent_prompt(root, path, display, agent, folder, winners) -> tuple:
    return import_prompt(root, path, display, _require(agent, folder, display), winners)


def _import_memory(root, path: Path, display: str, agent, folder: Path, winners: dict) -> tuple:
    agent = _require(agent, folder, display)
    try:
        partner_id = int(path.stem)
    except ValueError:
        raise ImportFileError(
            f'{display}: the file name "{path.stem}" is not a Telegram user id: '
            "name it <user id>.json, e.g. 123456789.json"
        ) from None
    key = path.stem
    shadowed = _shadowed(winners, key, f"memories of {agent.name} about {partner_id}")
    if shadowed:
        return shadowed
    text, digest = read_file(path, display, kind="memory")
    parsed = memory_io.parse_curated_memory_file(text, source=display)
    winners[key] = display  # only after a successful parse, like personas
    count = len(parsed.entries)
    if memory_io.curated_memories_unchanged(
        agent=agent, partner_id=partner_id, source_file=str(path), content_hash=digest, empty=not count
    ):
        return Outcome.UNCHANGED, f"{count} memories", parsed.warnings
    result = memory_io.curated_memories_replace(
        agent=agent,
        partner_id=partner_id,
        entries=parsed.entries,
        source_file=str(path),
        content_hash=digest,
        envelope=parsed.envelope,
    )
    return Outcome(result), f"{count} memories of {agent.name} about {partner_id}", parsed.warnings


def _import_document(root, path: Path, display: str, agent, folder: Path, winners: dict) -> tuple:
    agent = _require(agent, folder, display)
    key = path.name
    shadowed = _shadowed(winners, key, f"document {path.name} of {agent.name}")
    if shadowed:
        return shadowed
    text, digest = read_file(path, display, kind="document")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise ImportFileError(
            f"{display}: {len(text):,} characters, more than the {MAX_DOCUMENT_CHARS:,} a document may have: "
            "split it into several documents"
        )
    if len(path.name) > 255:
        raise ImportFileError(f"{display}: the file name is longer than 255 characters: rename it")
    winners[key] = display
    document = AgentDocument.objects.filter(agent=agent, name=path.name).first()
    if document and document.content_hash == digest and document.source_file == str(path):
        return Outcome.UNCHANGED, f"{path.name} of {agent.name}"
    outcome = Outcome.UPDATED if document else Outcome.CREATED
    document = document or AgentDocument(agent=agent, name=path.name)
    document.content = text
    document.source_file = str(path)
    document.content_hash = digest
    document.save()
    return outcome, f"{path.name} of {agent.name}"
