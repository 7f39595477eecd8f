"""The import graph of the project's own Python files, and its circles.

Which files count: every `.py` file of the checkout outside hidden directories (`.venv`, `.git`),
tests and migrations included, named by its path (`agents/models/__init__.py` is `agents.models`).
Tests and migrations cannot close a circle through product code (nothing imports them), and a circle
among them is as confusing as any other, so the rule has no exceptions to remember.

Which imports count: `import a.b` and `from a import b`, absolute and relative, wherever they stand in
the file: at module level, inside functions, under `if TYPE_CHECKING:`. An import deferred into a
function, or kept for the type checker only, is still a circle, only hidden. An import is an edge to
the most specific project module it names: `from a.b import c` points at `a.b.c` when that is a module,
otherwise at `a.b` (where `c` is defined or re-exported). Parent packages are not added as extra
edges, so a package's `__init__` that re-exports its own submodules makes no circle with them.
Imports built at run time from strings (`importlib.import_module(name)`) are not seen.

A circle is a strongly connected component of more than one module.
"""

from __future__ import annotations

import ast
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

SKIPPED_DIRS = {"__pycache__", "node_modules"}


@dataclass(frozen=True)
class ImportSite:
    """Where an edge comes from: the importing file and line."""

    path: Path
    line: int


@dataclass
class ImportGraph:
    """Modules by dotted name, and for each the project modules it imports, with where."""

    modules: dict[str, Path] = field(default_factory=dict)
    edges: dict[str, dict[str, list[ImportSite]]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<ImportGraph of {len(self.modules)} modules, {self.edge_count()} edges>"

    def edge_count(self) -> int:
        return sum(len(targets) for targets in self.edges.values())


def find_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every counted file under `root`."""
    modules: dict[str, Path] = {}
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = Path(directory) / name
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts:
                modules[".".join(parts)] = path
    return modules


def _longest_known_prefix(name: str, modules: dict[str, Path]) -> str | None:
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    """The project modules one import statement names (see the module docstring for the rule)."""
    if isinstance(node, ast.Import):
        found = (_longest_known_prefix(alias.name, modules) for alias in node.names)
        return [target for target in found if target]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        if node.level - 1 > len(package):
            raise ValueError(f"{module}: relative import beyond the top-level package (line {node.lineno})")
        base_parts = package[: len(package) - (node.level - 1)]
        if node.module:
            base_parts += node.module.split(".")
        base = ".".join(base_parts)
    else:
        base = node.module or ""
    targets = []
    for alias in node.names:
        submodule = f"{base}.{alias.name}" if base else alias.name
        target = submodule if submodule in modules else _longest_known_prefix(base, modules)
        if target:
            targets.append(target)
    return targets


def build_graph(root: Path) -> ImportGraph:
    """Parse every counted module under `root` and collect its imports of other project modules."""
    graph = ImportGraph(modules=find_modules(root))
    for module, path in graph.modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        out = graph.edges.setdefault(module, {})
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, module, is_package, graph.modules):
                if target == module:
                    continue
                sites = out.setdefault(target, [])
                if ImportSite(path, node.lineno) not in sites:
                    sites.append(ImportSite(path, node.lineno))
    return graph


def strongly_connected(edges: dict[str, dict[str, list[ImportSite]]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: every strongly connected component, each sorted by name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def shortest_cycle(edges: dict[str, dict[str, list[ImportSite]]], component: list[str]) -> list[str]:
    """A shortest closed path through the component's first module, staying inside the component:
    [a, b, ..., a]."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(edges.get(node, {})):
            if child not in members:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    raise ValueError(f"{component} is not a strongly connected component of more than one module")


def cycles(graph: ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module, largest first, then by name."""
    found = [c for c in strongly_connected(graph.edges) if len(c) > 1]
    return sorted(found, key=lambda c: (-len(c), c))


def describe_cycles(graph: ImportGraph, root: Path) -> str:
    """A report a person can act on: per circle, its members, one closed path, and every import
    line inside the circle."""
    lines = []
    for component in cycles(graph):
        members = set(component)
        path = shortest_cycle(graph.edges, component)
        lines.append(f"circle of {len(component)} modules: {' -> '.join(path)}")
        for source in component:
            for target, sites in sorted(graph.edges[source].items()):
                if target in members:
                    where = ", ".join(f"{site.path.relative_to(root)}:{site.line}" for site in sites)
                    lines.append(f"    {source} -> {target}  ({where})")
    return "\n".join(lines)
