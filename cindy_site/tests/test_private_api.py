"""Product code uses Django's and django-q2's documented API only (cindy_site/testing/private_api.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cindy_site.testing.private_api import find

pytestmark = pytest.mark.any_database  # reads source files only

ROOT = Path(__file__).resolve().parents[2]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_product_code_uses_no_framework_internals():
    found = find(ROOT)
    assert not found, "framework internals in product code (use the documented API):\n" + "\n".join(
        map(str, found)
    )


def test_it_reports_orm_internals_django_q_internals_and_private_attributes(tmp_path):
    _write(
        tmp_path,
        {
            "app/reads.py": (
                "from django.db.models.sql import UpdateQuery\n"
                "from django.db.models.query import ModelIterable, QuerySet\n"
                "from django_q.conf import Conf\n"
                "import django_q.cluster\n"
                "def f(queryset, obj):\n"
                "    compiler = queryset.query.get_compiler(using='default')\n"
                "    return queryset._prefetch_related_lookups, obj._state.adding, compiler\n"
            ),
        },
    )
    assert sorted((f.line, f.what) for f in find(tmp_path)) == [
        (1, "import django.db.models.sql"),
        (2, "import django.db.models.query.ModelIterable"),
        (3, "import django_q.conf"),
        (4, "import django_q.cluster"),
        (6, "compiler API .get_compiler"),
        (7, "private attribute ._prefetch_related_lookups"),
        (7, "private attribute ._state"),
    ]


def test_it_allows_the_documented_api_and_the_projects_own_private_names(tmp_path):
    _write(
        tmp_path,
        {
            "app/ok.py": (
                "from django.db.models.query import QuerySet\n"
                "from django_q.brokers import Broker, get_broker\n"
                "from django_q.tasks import async_task\n"
                "from django_q.models import OrmQ\n"
                "class Reader:\n"
                "    def __init__(self):\n"
                "        self._cache = {}\n"
                "def _helper(model, row, other):\n"
                "    return model._meta.db_table, row._replace(a=1), other._cache, super\n"
            ),
        },
    )
    assert find(tmp_path) == []


def test_tests_migrations_bench_and_test_support_are_not_product_code(tmp_path):
    bad = "from django.db.models.sql import Query\n"
    _write(
        tmp_path,
        {
            "app/tests/test_x.py": bad,
            "app/migrations/0001_initial.py": bad,
            "bench/bench_x.py": bad,
            "cindy_site/testing/helper.py": bad,
            "app/services.py": bad,
        },
    )
    assert [f.path for f in find(tmp_path)] == ["app/services.py"]
