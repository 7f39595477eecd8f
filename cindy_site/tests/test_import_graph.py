"""No import circles between the project's files (the rules of what counts: cindy_site/testing/import_graph.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cindy_site.testing.import_graph import build_graph, cycles, describe_cycles, shortest_cycle

ROOT = Path(__file__).resolve().parents[2]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture(scope="module")
def project_graph():
    return build_graph(ROOT)


def test_the_project_has_no_import_circles(project_graph):
    report = describe_cycles(project_graph, ROOT)
    assert not report, f"import circles between files (break each by moving the shared piece down):\n{report}"


def test_agents_memory_and_media_catalog_import_nothing_from_conversations(project_graph):
    # The house rule (dependencies point one way): the lower apps announce with signals
    # (agents/signals.py) what the conversations app acts on. Their tests may check how the apps
    # work together, so only product code counts.
    lower = ("agents", "memory", "media_catalog")
    found = [
        f"{source} -> {target}  ({', '.join(f'{s.path.relative_to(ROOT)}:{s.line}' for s in sites)})"
        for source, targets in sorted(project_graph.edges.items())
        if source.split(".")[0] in lower and ".tests" not in source
        for target, sites in sorted(targets.items())
        if target.split(".")[0] == "conversations"
    ]
    assert not found, "lower apps importing conversations:\n" + "\n".join(found)


def test_the_graph_covers_the_whole_project(project_graph):
    # The check above must not pass because the walk found nothing: the apps, their tests and
    # their migrations are all read, and their imports of each other are seen.
    assert {"agents.models", "conversations.models", "engine.gateway", "llm.planning"} <= set(
        project_graph.modules
    )
    assert "agents.tests.test_restart" in project_graph.modules
    assert "conversations.migrations.0001_initial" in project_graph.modules
    assert len(project_graph.modules) > 300
    assert project_graph.edge_count() > 1000
    assert "agents.models" in project_graph.edges["conversations.models.chat"]


def test_it_finds_a_circle_in_every_kind_of_import(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            # absolute from-import of a name
            "pkg/a.py": "from pkg.b import B\nA = 1\n",
            # relative from-import of a name, two levels up
            "pkg/sub/__init__.py": "",
            "pkg/b.py": "def f():\n    from .sub.c import C\nB = 2\n",
            # from-package-import-submodule, inside a function, back to the start
            "pkg/sub/c.py": "import typing\nif typing.TYPE_CHECKING:\n    from .. import a\nC = 3\n",
            # plain `import x.y`, and a relative import from a package's __init__
            "pkg/d.py": "import pkg.sub.e\n",
            "pkg/sub/e.py": "from . import f\n",
            "pkg/sub/f.py": "from .. import d\n",
            # an import of the package only (no circle: the __init__ re-exports a, not g)
            "pkg/g.py": "from pkg import A\n",
            "other.py": "import os\nimport pkg.g\n",
        },
    )
    graph = build_graph(tmp_path)

    assert graph.edges["pkg.b"] == {"pkg.sub.c": graph.edges["pkg.b"]["pkg.sub.c"]}
    assert graph.edges["pkg.b"]["pkg.sub.c"][0].line == 2
    assert set(graph.edges["pkg.sub.c"]) == {"pkg.a"}
    assert set(graph.edges["pkg.g"]) == {"pkg"}
    assert set(graph.edges["other"]) == {"pkg.g"}
    assert cycles(graph) == [
        ["pkg.a", "pkg.b", "pkg.sub.c"],
        ["pkg.d", "pkg.sub.e", "pkg.sub.f"],
    ]
    assert shortest_cycle(graph.edges, ["pkg.a", "pkg.b", "pkg.sub.c"]) == [
        "pkg.a",
        "pkg.b",
        "pkg.sub.c",
        "pkg.a",
    ]
    report = describe_cycles(graph, tmp_path)
    assert "circle of 3 modules: pkg.a -> pkg.b -> pkg.sub.c -> pkg.a" in report
    assert "pkg.sub.c -> pkg.a  (pkg/sub/c.py:3)" in report
    assert "pkg.g" not in report


def test_it_finds_no_circle_where_dependencies_point_one_way(tmp_path):
    _write(
        tmp_path,
        {
            "low/__init__.py": "",
            "low/base.py": "X = 1\n",
            "high/__init__.py": "",
            "high/a.py": "from low.base import X\n",
            "high/b.py": "from high.a import X\nfrom low import base\n",
            ".venv/lib/pkg.py": "from high.b import X\n",
            "low/tests/test_x.py": "from high import b\n",
        },
    )
    graph = build_graph(tmp_path)

    assert ".venv.lib.pkg" not in graph.modules
    assert {source: sorted(targets) for source, targets in graph.edges.items() if targets} == {
        "high.a": ["low.base"],
        "high.b": ["high.a", "low.base"],
        "low.tests.test_x": ["high.b"],
    }
    assert cycles(graph) == []
    assert describe_cycles(graph, tmp_path) == ""
