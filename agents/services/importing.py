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
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from agents.models import Agent, RolePrompt, Transport
from agents.persona import PERSONA_FIELDS, PersonaError, parse_persona
from agents.selectors import missing_role_prompts
from agents.services.import_limits import ImportLimitError, read_capped
from agents.services.import_report import FileKind, ImportReport, Outcome
from media_catalog.services import curated_io as media_io
from memory.services import curated_io as memory_io

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


class ImportFileError(ValueError):
    """A file that cannot be imported; the message is the full sentence shown to the operator."""


@dataclass(frozen=True)
class ConfigDir:
    display: str  # as configured, used in messages
    path: Path  # resolved

    def show(self, path: Path) -> str:
        return f"{self.display.rstrip('/')}/{path.relative_to(self.path).as_posix()}"


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
    from agents.services.import_folders import import_agent_folders  # it builds on this module

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
        if dry_run:
            transaction.set_rollback(True)
    return report


# --- helpers --------------------------------------------------------------------------------------


def read_file(path: Path, display: str, *, kind: str) -> tuple[str, str]:
    """Return (text with LF line endings, sha256 of the raw bytes). A link, a file outside its config
    directory, or one bigger than its kind's cap is refused before anything is read (import_limits)."""
    raw = read_capped(path, display, kind)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFileError(
            f"{display}: not UTF-8 text (bad byte at position {exc.start}): save the file as UTF-8"
        ) from exc
    return text.replace("\r\n", "\n").replace("\r", "\n"), hashlib.sha256(raw).hexdigest()


def run_file(report: ImportReport, display: str, kind: FileKind, work: Callable[[], tuple]) -> bool:
    """Run one file's import in its own transaction and record the outcome; True unless it failed."""
    try:
        with transaction.atomic():
            outcome, detail, *rest = work()
    except (
        PersonaError,
        ImportFileError,
        ImportLimitError,
        memory_io.CuratedFileError,
        media_io.CuratedMediaError,
    ) as exc:
        report.add(display, kind, Outcome.ERROR, str(exc))
        return False
    except Exception as exc:  # one bad file never stops the others; the traceback goes to the log
        logger.exception("importing %s failed", display)
        report.add(display, kind, Outcome.ERROR, f"{display}: {type(exc).__name__}: {exc}")
        return False
    report.add(display, kind, outcome, detail, rest[0] if rest else ())
    return True


def list_files(directory: Path, pattern: str) -> list[Path]:
    """The files to import; symbolic links are listed too, so that reading them is refused by name."""
    if not directory.is_dir():
        return []
    return sorted(
        p for p in directory.glob(pattern) if (p.is_file() or p.is_symlink()) and not p.name.startswith(".")
    )


# --- personas ------------------------------------------------------------------------------------


@dataclass
class PersonaWinners:
    """What the personas imported so far in this run hold: stems, names and phones, each to its file."""

    stems: dict[str, str] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    phones: dict[str, str] = field(default_factory=dict)
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


def phone_key(phone: str) -> str:
    """A phone number reduced to its digits, so "+1 555-123" and "+1555123" are the same account."""
    return "".join(ch for ch in phone if ch.isdigit())


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
    phone = phone_key(persona.phone)
    if phone in winners.phones:
        raise ImportFileError(
            f'{display}: "Agent Phone" {persona.phone} is already used by {winners.phones[phone]}: '
            "one Telegram account can run one persona; fix the phone number of one of them"
        )
    agent = (
        Agent.objects.filter(config_name=stem).first()
        or Agent.objects.filter(name=persona.name, config_name="").first()
    )
    _check_database_clashes(agent, persona.name, persona.phone, display)
    winners.stems[stem] = winners.names[persona.name] = winners.phones[phone] = display
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


def _check_database_clashes(agent: Agent | None, name: str, phone: str, display: str) -> None:
    """Another agent on record (from another file or made in the admin) must not have this name or phone."""
    others = Agent.objects.exclude(pk=agent.pk) if agent else Agent.objects.all()
    other = others.filter(name=name).first()
    if other is not None:
        origin = other.source_file or "the admin"
        raise ImportFileError(
            f'{display}: "Agent Name" {name} is already the name of another agent (from {origin}): '
            "rename one of them, or delete the other agent in the admin if it is stale"
        )
    key = phone_key(phone)
    for other_name, other_phone in others.values_list("name", "phone"):
        if phone_key(other_phone) == key:
            raise ImportFileError(
                f'{display}: "Agent Phone" {phone} is already the phone of agent {other_name}: '
                "one Telegram account can run one persona; fix the phone number of one of them"
            )


# --- prompts -------------------------------------------------------------------------------------


def _import_global_prompts(dirs: Iterable[ConfigDir], report: ImportReport) -> None:
    winners: dict[str, str] = {}
    for root in dirs:
        for path in list_files(root.path / "prompts", "*.md"):
            display = root.show(path)
            work = functools.partial(import_prompt, root, path, display, None, winners)
            run_file(report, display, FileKind.PROMPT, work)


def import_prompt(
    root: ConfigDir, path: Path, display: str, agent: Agent | None, winners: dict[str, str]
) -> tuple:
    name = path.stem
    if name in winners:
        return Outcome.SHADOWED, f'prompt "{name}" comes from {winners[name]}'
    text, digest = read_file(path, display, kind="prompt")
    if not text.strip():
        raise ImportFileError(f"{display}: the prompt is empty: write the prompt text or delete the file")
    if len(name) > 200:
        raise ImportFileError(
            f'{display}: prompt name "{name[:40]}…" is longer than 200 characters: rename it'
        )
    winners[name] = display  # only a valid file wins (a broken one must not hide a later valid one)
    prompt = RolePrompt.objects.filter(agent=agent, name=name).first()
    if prompt and prompt.content_hash == digest and prompt.source_file == str(path):
        return Outcome.UNCHANGED, name
    outcome = Outcome.UPDATED if prompt else Outcome.CREATED
    prompt = prompt or RolePrompt(agent=agent, name=name)
    prompt.text = text
    prompt.origin_dir = str(root.path)
    prompt.source_file = str(path)
    prompt.content_hash = digest
    prompt.save()
    return outcome, f"{name} ({agent.name if agent else 'global'})"


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
