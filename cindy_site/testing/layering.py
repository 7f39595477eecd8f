"""The order of the project's apps, and the imports that go against it.

An app may import its own modules and those of apps strictly lower in `LAYERS`. Two apps on the
same level do not know each other. Which imports count is the rule of `import_graph.py`: every
import statement, at module level, inside a function or under `if TYPE_CHECKING:`. An import
deferred into a function is still a dependency, only hidden.

Outside the order, and free to import anything (`WIRING`): the project's wiring (URL routes and
the ASGI/WSGI entry points put every app together), test support, tests, migrations (they name
other apps' models by history) and benchmarks. A file in a top-level package that is neither in
the order nor in the wiring is an error too, so that a new app cannot stay unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cindy_site.testing.import_graph import ImportGraph, ImportSite

# Lowest first. docs/DESIGN.md ("Apps and their order") quotes this list; change both together.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("cindy_site",),  # settings, clock, sign-in, small shared helpers
    ("agents",),
    ("memory", "media_catalog"),
    ("conversations",),
    ("telegram", "sandbox"),
    ("llm",),
    ("engine",),
    ("dashboard", "api", "cwimport"),
)

# Modules on top of the order: each may import any app. A name covers the module and everything
# under it. Keep this list short; every entry says why it is wiring.
WIRING: dict[str, str] = {
    "cindy_site.urls": "the URL routes put every app's views together",
    "cindy_site.asgi": "the ASGI entry point mounts the web and socket routes of every app",
    "cindy_site.wsgi": "the WSGI entry point, same as asgi",
    "cindy_site.testing": "test support builds scenarios out of every app",
    "conftest": "pytest's root fixtures",
    "manage": "the command-line entry point",
    "bench": "benchmarks drive the whole product, as tests do",
    "scripts": "one-off tools outside the product",
}

# Name segments that put a module outside the order wherever they appear.
EXEMPT_SEGMENTS = frozenset({"tests", "migrations"})


@dataclass(frozen=True)
class Violation:
    source: str
    target: str
    site: ImportSite
    source_app: str
    target_app: str
    reason: str


def _level_of(layers: tuple[tuple[str, ...], ...]) -> dict[str, int]:
    return {app: level for level, apps in enumerate(layers) for app in apps}


def is_wiring(module: str, wiring: dict[str, str] | None = None) -> bool:
    """Whether `module` sits on top of the order (wiring, tests, migrations, benchmarks)."""
    parts = module.split(".")
    if EXEMPT_SEGMENTS.intersection(parts) or parts[-1].startswith("test_"):
        return True
    return any(module == name or module.startswith(name + ".") for name in wiring or WIRING)


def violations(
    graph: ImportGraph,
    layers: tuple[tuple[str, ...], ...] = LAYERS,
    wiring: dict[str, str] | None = None,
) -> list[Violation]:
    """Every import of a product module that goes against the order: sideways, upwards, or from
    or into a top-level package the order does not know."""
    wiring = WIRING if wiring is None else wiring
    level = _level_of(layers)
    found = []
    for source, targets in sorted(graph.edges.items()):
        if is_wiring(source, wiring):
            continue
        source_app = source.split(".")[0]
        for target, sites in sorted(targets.items()):
            target_app = target.split(".")[0]
            if target_app == source_app:
                continue
            if source_app not in level:
                reason = f"{source_app} is not in the app order: add it to LAYERS or WIRING"
            elif is_wiring(target, wiring):
                reason = f"{target} is wiring or test code: product code must not import it"
            elif target_app not in level:
                reason = f"{target_app} is not in the app order: add it to LAYERS or WIRING"
            elif level[target_app] > level[source_app]:
                reason = (
                    f"{target_app} sits above {source_app}: move the shared piece down into "
                    f"{source_app} or lower, or let {target_app} hook itself in (signal, registry, "
                    "ready())"
                )
            elif level[target_app] == level[source_app]:
                reason = (
                    f"{source_app} and {target_app} share a level and do not know each other: "
                    "move the shared piece into a lower app"
                )
            else:
                continue
            found.extend(Violation(source, target, site, source_app, target_app, reason) for site in sites)
    return found


def describe(found: list[Violation], root: Path) -> str:
    """One line per import: file:line, from-app -> to-app (module -> module), and the fix."""
    return "\n".join(
        f"{v.site.path.relative_to(root)}:{v.site.line}: {v.source_app} -> {v.target_app} "
        f"({v.source} -> {v.target}): {v.reason}"
        for v in found
    )
