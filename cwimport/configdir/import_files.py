"""What every config importer shares: a config directory, reading and listing its files, running
one file's import, and importing one prompt file (global prompts, `cwimport.configdir.importing`, and an
agent's own, `cwimport.configdir.import_folders`)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from agents.models import Agent, RolePrompt
from agents.persona import PersonaError
from cwimport.configdir.import_limits import ImportLimitError, read_capped
from cwimport.configdir.import_report import FileKind, ImportReport, Outcome
from media_catalog.services import curated_io as media_io
from memory.services import curated_io as memory_io

logger = logging.getLogger(__name__)


class ImportFileError(ValueError):
    """A file that cannot be imported; the message is the full sentence shown to the operator."""


@dataclass(frozen=True)
class ConfigDir:
    display: str  # as configured, used in messages
    path: Path  # resolved

    def show(self, path: Path) -> str:
        return f"{self.display.rstrip('/')}/{path.relative_to(self.path).as_posix()}"


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
        report.add(display, kind, Outcome.ERROR, str(exc), getattr(exc, "warnings", ()))
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
