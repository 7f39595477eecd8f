"""What an import did, file by file: the rows `importagents` prints and tests assert on."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum


class Outcome(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    SHADOWED = "shadowed"
    ERROR = "error"


class FileKind(StrEnum):
    PERSONA = "persona"
    PROMPT = "prompt"
    AGENT_PROMPT = "agent prompt"
    MEMORY = "memory"
    DOCUMENT = "document"
    MEDIA = "media"
    CONFIG_DIR = "config dir"


@dataclass
class FileResult:
    path: str  # as the operator would type it: "<config dir>/agents/Heidi.md"
    kind: FileKind
    outcome: Outcome
    detail: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    results: list[FileResult] = field(default_factory=list)
    dry_run: bool = False

    def add(self, path: str, kind: FileKind, outcome: Outcome, detail: str = "", warnings=()) -> FileResult:
        result = FileResult(path, kind, outcome, detail, list(warnings))
        self.results.append(result)
        return result

    @property
    def errors(self) -> list[FileResult]:
        return [r for r in self.results if r.outcome == Outcome.ERROR]

    @property
    def warnings(self) -> list[str]:
        return [w for r in self.results for w in r.warnings]

    def counts(self) -> Counter:
        return Counter(r.outcome for r in self.results)

    def by_path(self, suffix: str) -> FileResult:
        """The single result whose path ends with `suffix` (handy in tests and scripts)."""
        matches = [r for r in self.results if r.path.endswith(suffix)]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} results end with {suffix!r}")
        return matches[0]

    def summary(self) -> str:
        counts = self.counts()
        parts = [f"{counts.get(o, 0)} {o.value}" for o in Outcome if o != Outcome.ERROR]
        errors, warnings = counts.get(Outcome.ERROR, 0), len(self.warnings)
        prefix = "Dry run, nothing saved: " if self.dry_run else ""
        return (
            f"{prefix}{len(self.results)} files: {', '.join(parts)}; "
            f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"
        )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
