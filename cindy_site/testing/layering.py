"""The order of the project's apps, and the imports that go against it.

An app may import its own modules and those of apps strictly lower in `LAYERS`. Two apps on the
same level do not know each other, and no two apps import each other. Which imports count is the rule
of `import_graph.py`: every import statement, at module level, inside a function or under
`if TYPE_CHECKING:`. An import deferred into a function is still a dependency, only hidden.

Outside the order, and free to import anything (`WIRING`): the project's wiring (the URL routes and
the ASGI/WSGI entry points put every app together), test support, tests and migrations (wherever a
`tests` or `migrations` package sits), and the tools around the product. Product code may not import
them. A top-level package that is neither in the order nor in the wiring is an error too, so that a
new app cannot stay unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cindy_site.testing.import_graph import ImportGraph, ImportSite

# Lowest first. docs/DESIGN.md ("Apps and their order") quotes this list as `order_text()` renders
# it, and a test holds the two together.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cindy_site",),
    ("agents",),
    ("memory", "media_catalog"),
    ("conversations",),
    ("recall",),
    ("telegram", "sandbox"),
    ("llm",),
    ("engine",),
    ("dashboard", "api", "cwimport"),
)

# On top of the order: each may import any app. A name covers the module and everything under it.
WIRING: dict[str, str] = {
    "cindy_site.urls": "the URL routes put every app's views together",
    "cindy_site.asgi": "the ASGI entry point mounts every app's HTTP and socket routes",
    "cindy_site.wsgi": "the WSGI entry point, as asgi",
    "cindy_site.testing": "test support builds scenarios out of every app",
    "conftest": "the suite's root fixtures",
    "bench": "benchmarks drive the whole product, as tests do",
    "manage": "the command-line entry point",
    "scripts": "tools that draw the project's pictures, outside the product",
}

# A package of these names is test or migration code wherever it sits (`agents.tests`, ...).
EXEMPT_PACKAGES = frozenset({"tests", "migrations"})


@dataclass(frozen=True)
class Violation:
    source: str
    target: str
    site: ImportSite
    source_app: str
    target_app: str
    reason: str

    def describe(self, root: Path) -> str:
        where = f"{self.site.path.relative_to(root)}:{self.site.line}"
        return (
            f"{where}: {self.source_app} -> {self.target_app} ({self.source} -> {self.target}): {self.reason}"
        )


def order_text(layers: tuple[tuple[str, ...], ...] = LAYERS) -> str:
    """The order as docs/DESIGN.md quotes it: one numbered line per level, lowest first."""
    return "\n".join(f"{n}. {', '.join(apps)}" for n, apps in enumerate(layers, start=1))


def is_wiring(module: str, wiring: dict[str, str] | None = None) -> bool:
    """Whether `module` sits on top of the order: wiring, tools, tests or migrations."""
    if EXEMPT_PACKAGES.intersection(module.split(".")):
        return True
    names = WIRING if wiring is None else wiring
    return any(module == name or module.startswith(name + ".") for name in names)


def unplaced(
    graph: ImportGraph, layers: tuple[tuple[str, ...], ...] = LAYERS, wiring: dict[str, str] | None = None
) -> list[str]:
    """Top-level packages and modules that are neither in the order nor wiring."""
    apps = {app for level in layers for app in level}
    tops = {module.split(".")[0] for module in graph.modules if not is_wiring(module, wiring)}
    return sorted(tops - apps)


def violations(
    graph: ImportGraph,
    layers: tuple[tuple[str, ...], ...] = LAYERS,
    wiring: dict[str, str] | None = None,
    pending: frozenset[tuple[str, str]] = frozenset(),
) -> list[Violation]:
    """Every import of a product module against the order: upwards, sideways between two apps of
    one level, into wiring or test code, or from or into a package the order does not place.
    `pending` lists (importer, imported) module pairs to leave out while their move is under way."""
    level = {app: n for n, apps in enumerate(layers) for app in apps}
    found = []
    for source, targets in sorted(graph.edges.items()):
        if is_wiring(source, wiring):
            continue
        source_app = source.split(".")[0]
        for target, sites in sorted(targets.items()):
            target_app = target.split(".")[0]
            if target_app == source_app or (source, target) in pending:
                continue
            reason = _reason(source_app, target, target_app, level, wiring)
            if reason:
                found.extend(
                    Violation(source, target, site, source_app, target_app, reason) for site in sites
                )
    return found


def _reason(
    source_app: str, target: str, target_app: str, level: dict[str, int], wiring: dict[str, str] | None
) -> str:
    """Why an import from `source_app` into `target` breaks the order, or "" when it does not."""
    if source_app not in level:
        return f"{source_app} is not placed: add it to LAYERS, or to WIRING with the reason"
    if is_wiring(target, wiring):
        return f"{target} is wiring or test code, which product code does not import"
    if target_app not in level:
        return f"{target_app} is not placed: add it to LAYERS, or to WIRING with the reason"
    if level[target_app] > level[source_app]:
        return (
            f"{target_app} sits above {source_app}: move the piece both need down into {source_app} "
            f"or lower, or let {target_app} hook itself in (a signal, a registry, its AppConfig.ready())"
        )
    if level[target_app] == level[source_app]:
        return (
            f"{source_app} and {target_app} share a level and do not know each other: move the piece "
            "both need into a lower app"
        )
    return ""


def mutual_apps(
    graph: ImportGraph,
    wiring: dict[str, str] | None = None,
    pending: frozenset[tuple[str, str]] = frozenset(),
) -> list[tuple[str, str]]:
    """Pairs of apps whose product code imports each other, whatever the order says."""
    imports: set[tuple[str, str]] = set()
    for source, targets in graph.edges.items():
        if is_wiring(source, wiring):
            continue
        for target in targets:
            if not is_wiring(target, wiring) and (source, target) not in pending:
                imports.add((source.split(".")[0], target.split(".")[0]))
    return sorted((a, b) for a, b in imports if a < b and (b, a) in imports)
