"""No import circles between the project's files, and no import against the order of its apps (the rules
of what counts: cindy_site/testing/import_graph.py and cindy_site/testing/layering.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cindy_site.testing.import_graph import build_graph, cycles, describe_cycles, shortest_cycle
from cindy_site.testing.layering import LAYERS, mutual_apps, order_text, unplaced, violations

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.any_database  # reads source files only

# PENDING: the imports still against the order, each waiting for the move named above it. An entry
# goes when its move lands: the pending-list test fails for an import that no longer exists.
PENDING = frozenset({})


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


def test_every_product_import_follows_the_app_order(project_graph):
    found = violations(project_graph, pending=PENDING)
    report = "\n".join(v.describe(ROOT) for v in found)
    assert not found, f'imports against the app order (docs/DESIGN.md, "Apps and their order"):\n{report}'


def test_no_two_apps_import_each_other(project_graph):
    assert mutual_apps(project_graph, pending=PENDING) == []


def test_every_top_level_package_has_a_place_in_the_order(project_graph):
    assert unplaced(project_graph) == []


def test_the_pending_list_names_only_imports_that_still_exist(project_graph):
    gone = sorted(pair for pair in PENDING if pair[1] not in project_graph.edges.get(pair[0], {}))
    assert not gone, f"these moves have landed: remove them from PENDING: {gone}"


def test_the_design_document_quotes_the_order_as_the_check_knows_it():
    design = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    assert order_text() in design, f"docs/DESIGN.md must quote the order as:\n{order_text()}"
    assert len({app for level in LAYERS for app in level}) == sum(len(level) for level in LAYERS)


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


def test_it_fails_on_an_import_against_the_order_with_where_and_what_to_do(tmp_path):
    _write(
        tmp_path,
        {
            "core/__init__.py": "",
            "core/clock.py": "X = 1\n",
            "low/__init__.py": "",
            # upwards, hidden in a function
            "low/a.py": "from core.clock import X\n\ndef f():\n    from high.b import Y\n",
            # upwards, for the type checker only
            "low/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import high.b\n",
            "side/__init__.py": "",
            # sideways, between two apps of one level
            "side/d.py": "from low.a import f\n",
            "high/__init__.py": "",
            "high/b.py": "from low import a\nY = 2\n",
            # product code reaching into test support
            "high/e.py": "from core.testing import helper\n",
            "core/testing.py": "from high.b import Y\n",
            # exempt: tests, migrations and the wiring import anything
            "low/tests/test_x.py": "from high.b import Y\n",
            "low/migrations/0001_initial.py": "from high.b import Y\n",
            "core/urls.py": "from high.b import Y\n",
            # a package the order does not place
            "stray/__init__.py": "from low.a import f\n",
        },
    )
    layers = (("core",), ("low", "side"), ("high",))
    wiring = {"core.urls": "routes", "core.testing": "test support"}
    graph = build_graph(tmp_path)

    found = violations(graph, layers=layers, wiring=wiring)
    lines = [v.describe(tmp_path) for v in found]

    assert {(v.source, v.target) for v in found} == {
        ("low.a", "high.b"),
        ("low.c", "high.b"),
        ("side.d", "low.a"),
        ("high.e", "core.testing"),
        ("stray", "low.a"),
    }
    assert (
        "low/a.py:4: low -> high (low.a -> high.b): high sits above low: move the piece both need down "
        "into low or lower, or let high hook itself in (a signal, a registry, its AppConfig.ready())"
    ) in lines
    assert any(line.startswith("low/c.py:3: low -> high ") for line in lines)
    assert any(
        line.startswith("side/d.py:1: side -> low ") and "share a level and do not know each other" in line
        for line in lines
    )
    assert any(line.startswith("high/e.py:1: high -> core ") and "test code" in line for line in lines)
    assert any(
        line.startswith("stray/__init__.py:1: stray -> low ") and "not placed" in line for line in lines
    )
    assert unplaced(graph, layers=layers, wiring=wiring) == ["stray"]
    assert mutual_apps(graph, wiring=wiring) == [("high", "low")]
    pending = frozenset({("low.a", "high.b"), ("low.c", "high.b")})
    assert mutual_apps(graph, wiring=wiring, pending=pending) == []
    assert ("low.a", "high.b") not in {
        (v.source, v.target) for v in violations(graph, layers, wiring, pending)
    }


def test_the_order_renders_one_numbered_line_per_level():
    assert order_text((("core",), ("low", "side"))) == "1. core\n2. low, side"
