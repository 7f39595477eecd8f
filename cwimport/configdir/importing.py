"""Import config directories in the original on-disk formats into the database.

Layout of one config directory (every part optional):

    agents/<stem>.md                  persona files; the stem is the persona's identity
    agents/<stem>/prompts/<P>.md      role prompts for that agent only
    agents/<stem>/memory/<uid>.json   curated memories about one partner
    agents/<stem>/docs/<D>.md         documents the agent reads with file:<D> retrieve URLs
    prompts/<P>.md                    global role prompts
    media/<unique id>.json            curated media descriptions, media file beside each

Directories are given in priority order: for personas, prompts, memories, documents and media alike, the first
directory that defines something with a valid file wins and later definitions are reported as
shadowed. A broken file wins nothing: a valid definition in a later directory is imported instead. Each file is
imported in its own transaction, so one bad file never stops the others, and a file whose content hash
is already on record is reported unchanged and touches nothing (edits made in the admin survive until
the file itself changes).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from agents.models import Agent, Transport
from agents.persona import PERSONA_FIELDS, parse_persona
from agents.selectors import agents_by_phone, missing_role_prompts
from cwimport.configdir.import_files import (
    ConfigDir,
    ImportFileError,
    import_prompt,
    list_files,
    read_file,
    run_file,
)
from cwimport.configdir.import_folders import import_agent_folders
from cwimport.configdir.import_limits import read_capped
from cwimport.configdir.import_report import FileKind, ImportReport, Outcome
from media_catalog.services import curated_io as media_io

Progress = Callable[[int, int], None]


def configured_dirs(entries: Sequence[str] | None = None) -> list[ConfigDir]:
    """The config directories to import: `entries`, else CINDY_AGENT_CONFIG_PATH split on ":".

    Entries are stripped of surrounding spaces. A relative entry is looked up in the current directory
    first, then under BASE_DIR, so the default `samples:configdir` works from anywhere.
    """
    if not entries:
        entries = settings.CINDY_AGENT_CONFIG_PATH.split(":")
    dirs = []
    for entry in (e.strip() for e in entries):
        if not entry:
            continue
        path = Path(entry).expanduser()
        if not path.is_absolute() and not path.exists():
            path = Path(settings.BASE_DIR) / path
        dirs.append(ConfigDir(display=str(entry), path=path.resolve()))
    return dirs


def default_transport() -> str:
    """Telegram when API credentials are configured; otherwise the sandbox, so personas still run."""
    if settings.TELEGRAM_API_ID and settings.TELEGRAM_API_HASH:
        return Transport.TELEGRAM
    return Transport.SANDBOX


def config_import(
    *, dirs: Sequence[ConfigDir], dry_run: bool = False, progress: Progress | None = None
) -> ImportReport:
    """Import every config directory in priority order and report each file.

    Steps: personas first (agent-scoped files need their agent), then global prompts, then each
    agent folder's prompts and memories, then media. With `dry_run` all writes are rolled back and
    no media file is copied.
    """
    report = ImportReport(dry_run=dry_run)
    existing = []
    for root in dirs:
        if root.path.is_dir():
            existing.append(root)
        else:
            report.add(
                root.display,
                FileKind.CONFIG_DIR,
                Outcome.ERROR,
                f"{root.display}: config directory not found at {root.path}: "
                "create it or fix CINDY_AGENT_CONFIG_PATH / the command arguments",
            )
    with transaction.atomic() if dry_run else contextlib.nullcontext():
        personas = _import_personas(existing, report)
        _import_global_prompts(existing, report)
        import_agent_folders(existing, report)
        _import_media(existing, report, progress=progress, store_files=not dry_run)
        _check_role_prompts(personas, report)
        _warn_shared_phones(report, personas)
        if dry_run:
            transaction.set_rollback(True)
    return report


# --- personas ------------------------------------------------------------------------------------


@dataclass
class PersonaWinners:
    """What the personas imported so far in this run hold: stems and names, each to its file."""

    stems: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    agents: dict[str, str] = field(default_factory=dict)  # agent name -> file, for the role prompt check


def _import_personas(dirs: Iterable[ConfigDir], report: ImportReport) -> dict[str, str]:
    """Import persona files; return {agent name: file it came from} for the winners.

    A persona's identity is its file stem, as in cw-telegram-agent: `agents/wendy.md` in an earlier
    directory shadows `agents/wendy.md` in a later one whatever their Agent Names say.
    """
    winners = PersonaWinners()
    for root in dirs:
        for path in list_files(root.path / "agents", "*.md"):
            display = root.show(path)
            run_file(
                report,
                display,
                FileKind.PERSONA,
                functools.partial(_import_persona, root, path, display, winners),
            )
    return winners.agents


def _check_role_prompts(personas: dict[str, str], report: ImportReport) -> None:
    """Warn about "Role Prompt" names that no prompt file provides; the persona would run without them."""
    results = {r.path: r for r in report.results if r.outcome != Outcome.ERROR}
    for name, display in personas.items():
        agent = Agent.objects.filter(name=name).first()
        if agent is None or display not in results:
            continue
        missing = missing_role_prompts(agent=agent)
        if missing:
            stem = agent.config_name or name
            results[display].warnings.append(
                f'{display}: "Role Prompt" names {", ".join(missing)} but no such prompt exists: '
                f"add prompts/<name>.md or agents/{stem}/prompts/<name>.md, or remove the line"
            )


def _import_persona(root: ConfigDir, path: Path, display: str, winners: PersonaWinners) -> tuple:
    text, digest = read_file(path, display, kind="persona")
    persona = parse_persona(text, source=display)
    stem = path.stem
    if stem in winners.stems:
        return Outcome.SHADOWED, f'agent file "{stem}" comes from {winners.stems[stem]}'
    if persona.name in winners.names:
        raise ImportFileError(
            f'{display}: "Agent Name" {persona.name} is already used by {winners.names[persona.name]}: '
            "give one of the two personas another name"
        )
    agent = (
        Agent.objects.filter(config_name=stem).first()
        or Agent.objects.filter(name=persona.name, config_name="").first()
    )
    _check_database_clashes(agent, persona.name, display)
    winners.stems[stem] = winners.names[persona.name] = display
    winners.agents[persona.name] = display
    if agent and agent.content_hash == digest and agent.source_file == str(path):
        return Outcome.UNCHANGED, persona.name, persona.warnings
    values = persona.values()
    if agent is None:
        agent = Agent(**values, transport=default_transport())
        outcome, detail = Outcome.CREATED, f"{persona.name} ({agent.transport})"
    else:
        changed = [name for name in PERSONA_FIELDS if getattr(agent, name) != values[name]]
        for name, value in values.items():
            setattr(agent, name, value)
        outcome = Outcome.UPDATED
        detail = f"{persona.name}: " + (", ".join(changed) + " changed" if changed else "source file changed")
    agent.config_name = stem
    agent.source_file = str(path)
    agent.config_dir = str(root.path)
    agent.content_hash = digest
    agent.save()
    return outcome, detail, persona.warnings


def _check_database_clashes(agent: Agent | None, name: str, display: str) -> None:
    """Another agent on record (from another file or made in the admin) must not have this name."""
    others = Agent.objects.exclude(pk=agent.pk) if agent else Agent.objects.all()
    other = others.filter(name=name).first()
    if other is not None:
        origin = other.source_file or "the admin"
        raise ImportFileError(
            f'{display}: "Agent Name" {name} is already the name of another agent (from {origin}): '
            "rename one of them, or delete the other agent in the admin if it is stale"
        )


def _warn_shared_phones(report: ImportReport, personas: dict[str, str]) -> None:
    """One warning per phone that an imported persona shares with other agents, naming each of them.

    As in the original, personas may share a phone (its samples all do); only one of them can run on
    the account at a time, so the gateway starts one enabled Telegram persona per phone and refuses the
    others (sandbox personas never use their phone).
    """
    results = {r.path: r for r in report.results if r.outcome != Outcome.ERROR}
    for agents in agents_by_phone().values():
        files = [personas.get(a.name) for a in agents]
        first = next((results[f] for f in files if f in results), None)
        if first is None:
            continue
        named = ", ".join(
            f"{display or a.source_file or 'agent ' + a.name + ' (made in the admin)'}"
            f" ({'disabled' if a.disabled else 'enabled'})"
            for a, display in zip(agents, files, strict=True)
        )
        enabled = [a.name for a in agents if not a.disabled]
        outcome = (
            f"on Telegram the gateway starts only one of {', '.join(enabled)} (the one already running, else "
            "the first imported); disable the others or give each its own phone"
            if len(enabled) > 1
            else f"keep at most one of them enabled (enabled now: {', '.join(enabled) or 'none'})"
        )
        first.warnings.append(
            f'{first.path}: "Agent Phone" {agents[0].phone} is shared by {named}: one Telegram account '
            f"runs one persona at a time; {outcome}"
        )


# --- prompts -------------------------------------------------------------------------------------


def _import_global_prompts(dirs: Iterable[ConfigDir], report: ImportReport) -> None:
    winners: dict[str, str] = {}
    for root in dirs:
        for path in list_files(root.path / "prompts", "*.md"):
            display = root.show(path)
            work = functools.partial(import_prompt, root, path, display, None, winners)
            run_file(report, display, FileKind.PROMPT, work)


# --- media ---------------------------------------------------------------------------------------


def _import_media(
    dirs: Iterable[ConfigDir], report: ImportReport, *, progress: Progress | None, store_files: bool
) -> None:
    files = [(root, path) for root in dirs for path in list_files(root.path / "media", "*.json")]
    winners: dict[str, str] = {}
    for done, (root, path) in enumerate(files, start=1):
        display = root.show(path)
        work = functools.partial(_import_one_media, root, path, display, winners, store_files)
        run_file(report, display, FileKind.MEDIA, work)
        if progress:
            progress(done, len(files))


def _import_one_media(
    root: ConfigDir, path: Path, display: str, winners: dict[str, str], store_files: bool
) -> tuple:
    if path.stem in winners:
        return Outcome.SHADOWED, f'media "{path.stem}" comes from {winners[path.stem]}'
    text, digest = read_file(path, display, kind="media_json")
    warnings: list[str] = []
    values = media_io.parse_curated_media(text, source=display, stem=path.stem, warnings=warnings)
    winners[path.stem] = display  # only after a successful parse, like personas
    media_path = media_io.find_media_file(path)
    if media_path is not None:
        media_bytes = read_capped(media_path, root.show(media_path), "media_file")
        digest = hashlib.sha256((digest + media_path.name).encode() + media_bytes).hexdigest()
    if media_io.curated_media_unchanged(
        unique_id=values["unique_id"], source_file=str(path), content_hash=digest
    ):
        return Outcome.UNCHANGED, values["unique_id"], warnings
    outcome = media_io.curated_media_save(
        values=values,
        media_path=media_path,
        origin_dir=str(root.path),
        source_file=str(path),
        content_hash=digest,
        store_file=store_files,
    )
    label = (
        values["sticker_set_name"] + " :: " + values["sticker_name"]
        if values["sticker_set_name"]
        else values["kind"]
    )
    file_note = f", file {media_path.name}" if media_path else ", no media file"
    return Outcome(outcome), f"{label}{file_note}", warnings
