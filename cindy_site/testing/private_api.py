"""Finding uses of framework internals in product code (cindy_site/tests/test_private_api.py).

Django and django-q2 change their private names between releases without notice (a replay of the
ORM's compiled SQL through ~30 of them broke on each upgrade), so product code may use their
documented API only. The walk reads every product file with `ast` (not tests, migrations, bench,
scripts or test support) and reports:

- imports of Django's ORM internals (`django.db.models.sql`, `django.db.models.query_utils`, the
  private parts of `django.db.models.query` and `django.db.models.base`);
- imports of django-q2 beyond its public modules (`django_q.tasks`, `django_q.brokers`, the
  database broker `django_q.brokers.orm` that a custom broker may extend, `django_q.models`,
  `django_q.signals`);
- an attribute with a leading underscore that the project does not define itself (`queryset._db`,
  `obj._state`), except the documented ones (`_meta`, `_default_manager`, named tuples' `_replace`...);
- the query compiler's API (`query.get_compiler`, `compiler.execute_sql`, ...), underscore or not.

`EXCEPTIONS` lists the uses kept on purpose, each with its reason (docs/DESIGN.md).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Directories that are not product code.
SKIPPED_PARTS = {".venv", "tests", "migrations", "node_modules", "__pycache__", ".git"}
SKIPPED_TOP = {"bench", "scripts", "samples", "static", "templates", "configdir"}
SKIPPED_FILES = {"conftest.py", "manage.py"}
SKIPPED_PREFIXES = ("cindy_site/testing/",)

#: Django modules that are internal as a whole.
INTERNAL_DJANGO = ("django.db.models.sql", "django.db.models.query_utils")
#: Names of otherwise public Django modules that are documented (anything else from them is internal).
PUBLIC_NAMES = {
    "django.db.models.query": {"QuerySet", "Prefetch", "prefetch_related_objects"},
    "django.db.models.base": set(),
}
#: django-q2's public modules and, where a module is partly public, its public names.
PUBLIC_DJANGO_Q = {
    "django_q.tasks": None,
    "django_q.brokers": {"Broker", "get_broker"},
    "django_q.brokers.orm": {"ORM"},
    "django_q.models": None,
    "django_q.signals": None,
}
#: Underscore attributes that are documented API.
DOCUMENTED_UNDERSCORE = {
    "_meta",
    "_default_manager",
    "_base_manager",
    "_replace",
    "_asdict",
    "_fields",
    "_make",
    "_field_defaults",
    "_value_",
    "_name_",
    "_missing_",
    "_generate_next_value_",
    "_exit",  # os._exit
}
#: Django's private names, reported even where the project happens to define a name like them.
DJANGO_PRIVATE = {
    "_state",
    "_db",
    "_hints",
    "_result_cache",
    "_prefetch_related_lookups",
    "_known_related_objects",
    "_iterable_class",
    "_for_write",
    "_prepare_related_fields_for_save",
    "_do_insert",
    "_do_update",
    "_save_table",
    "_get_pk_val",
    "_set_pk_val",
}
#: The query compiler's API: internal although it has no underscore.
COMPILER_API = {
    "get_compiler",
    "execute_sql",
    "get_converters",
    "apply_converters",
    "sql_with_params",
    "get_related_populators",
    "results_iter",
}
#: (file, what) pairs kept on purpose; the reasons are in docs/DESIGN.md ("Framework API").
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("engine/cluster.py", "import django_q.cluster"): "the guarded sentinel extends django-q2's pool",
    ("engine/cluster.py", "import django_q.conf"): "the pool reads django-q2's resolved settings",
    ("engine/cluster.py", "import django_q.queues"): "the guarded sentinel rebuilds the pool's queues",
    ("engine/cluster.py", "import django_q.scheduler"): "the guarded sentinel runs the schedule",
    ("engine/cluster.py", "import django_q.status"): "the guarded sentinel reports the pool's status",
    ("engine/cluster.py", "import django_q.worker"): "the guarded sentinel starts django-q2's workers",
    # Not a framework: the Gemini SDK's own converter builds the request body once per schema.
    ("llm/providers/gemini.py", "private attribute ._GenerateContentConfig_to_mldev"): "google-genai",
    ("llm/providers/gemini.py", "private attribute ._api_client"): "google-genai",
}


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def product_files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        parts = relative.parts
        if SKIPPED_PARTS & set(parts[:-1]) or parts[0] in SKIPPED_TOP or relative.name in SKIPPED_FILES:
            continue
        if relative.as_posix().startswith(SKIPPED_PREFIXES):
            continue
        yield path


def defined_names(trees: list[ast.AST]) -> set[str]:
    """Every underscore name the project defines: functions, classes, assigned names and attributes
    (`self._x = ...`), arguments, and import aliases."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
    return {name for name in names if name.startswith("_")}


def _import_findings(node: ast.AST) -> Iterator[tuple[int, str]]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield from _module_findings(node.lineno, alias.name, None)
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        for alias in node.names:
            yield from _module_findings(node.lineno, node.module, alias.name)


def _module_findings(line: int, module: str, name: str | None) -> Iterator[tuple[int, str]]:
    full = f"{module}.{name}" if name else module
    if any(full == m or full.startswith(m + ".") for m in INTERNAL_DJANGO):
        yield line, f"import {module}"
        return
    if module in PUBLIC_NAMES and (name is None or name not in PUBLIC_NAMES[module]):
        yield line, f"import {full}"
        return
    if module == "django_q" or module.startswith("django_q."):
        if module == "django_q" and name is not None and f"django_q.{name}" in PUBLIC_DJANGO_Q:
            return
        public = PUBLIC_DJANGO_Q.get(module, set())
        if module not in PUBLIC_DJANGO_Q or (public is not None and name is not None and name not in public):
            yield line, f"import {module}"


def _attribute_findings(node: ast.AST, defined: set[str]) -> Iterator[tuple[int, str]]:
    if not isinstance(node, ast.Attribute):
        return
    attr = node.attr
    if attr in COMPILER_API:
        yield node.lineno, f"compiler API .{attr}"
        return
    if not attr.startswith("_") or attr.startswith("__") or attr in DOCUMENTED_UNDERSCORE:
        return
    owner = node.value
    if isinstance(owner, ast.Name) and owner.id in {"self", "cls"}:
        return
    if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
        return
    if attr in DJANGO_PRIVATE or attr not in defined:
        yield node.lineno, f"private attribute .{attr}"


def find(root: Path) -> list[Finding]:
    """Every use of framework internals in the product code under `root`, but the `EXCEPTIONS`."""
    parsed = [(path, ast.parse(path.read_text(), filename=str(path))) for path in product_files(root)]
    defined = defined_names([tree for _, tree in parsed])
    findings = []
    for path, tree in parsed:
        relative = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            for line, what in (*_import_findings(node), *_attribute_findings(node, defined)):
                if (relative, what) not in EXCEPTIONS:
                    findings.append(Finding(relative, line, what))
    return findings
