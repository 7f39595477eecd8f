"""What the gateway and the task workers load (docs/performance.md, "Memory").

Each check runs in a fresh Python, as the process would start: what the test process itself has
imported says nothing about a gateway's or a worker's memory.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from agents.models import Agent
from cindy_site.testing.fixtures import sqlite_child_env
from engine.apps import task_providers

#: Modules a gateway or task worker must never import: the web server (daphne, Twisted, pyOpenSSL) and
#: the admin modules (and what they import, such as httpx for the LLM lists). Telethon is loaded only
#: for a Telegram agent.
WEB_ONLY = ("daphne", "twisted", "OpenSSL", "llm.admin_llms", "agents.admin")
SDKS = ("google.genai", "openai")


def run_fresh(tmp_path: Path, migrated_sqlite: Path, command: str, body: str, **env: str) -> dict:
    """Run `body` in a new Python set up as `manage.py <command>` on a migrated SQLite file (a copy of
    `migrated_sqlite`); the body sets `result`, which is returned."""
    database = tmp_path / "cindy.sqlite3"
    shutil.copyfile(migrated_sqlite, database)
    script = tmp_path / "probe.py"
    script.write_text(
        "import json, sys\n"
        f"sys.argv = ['manage.py', {command!r}]\n"
        "import django\n"
        "django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "result = {}\n"
        f"{body}\n"
        "print(json.dumps(result))\n"
    )
    child_env = sqlite_child_env(database, PYTHONPATH=str(settings.BASE_DIR), LOG_LEVEL="ERROR")
    child_env.update(CINDY_LEAN_ENGINE="true", CINDY_PRELOAD_TASK_MODULES="true")
    child_env.update(env)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=settings.BASE_DIR,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def loaded(names) -> str:
    return f"result.update({{m: m in sys.modules for m in {tuple(names)!r}}})"


def test_the_gateway_loads_no_web_module_no_llm_sdk_and_no_telethon_for_sandbox_agents(
    tmp_path, migrated_sqlite
):
    result = run_fresh(
        tmp_path,
        migrated_sqlite,
        "runagents",
        "import engine.management.commands.runagents\n"
        "call_command('check')\n"  # the system checks every command runs first
        + loaded((*WEB_ONLY, *SDKS, "telethon")),
    )
    assert [name for name, present in result.items() if present] == []


def test_the_gateway_does_not_load_prometheus_client_through_django_q(tmp_path, migrated_sqlite):
    """django-q2's settings module imports prometheus_client whenever it is installed (for its task
    pool's metrics); the gateway runs no pool and exports no metrics, and the package with its HTTP
    exposition is about 2 MiB of the gateway. The web process, which serves /metrics, still has it."""
    gateway = run_fresh(
        tmp_path,
        migrated_sqlite,
        "runagents",
        "import engine.management.commands.runagents\n"
        "import engine.dispatch, django_q.conf, django_q.tasks\n"
        "result['multiprocess'] = django_q.conf.prometheus_multiprocess is None\n"
        + loaded(("django_q.conf", "prometheus_client"))
        # Once the apps have loaded, nothing is left in its way.
        + "\nimport prometheus_client\nresult['importable'] = prometheus_client.CONTENT_TYPE_LATEST.startswith('text/')",
    )
    assert gateway == {
        "multiprocess": True,
        "django_q.conf": True,
        "prometheus_client": False,
        "importable": True,
    }
    web = run_fresh(
        tmp_path,
        migrated_sqlite,
        "check",
        "import django_q.conf, engine.metrics\n" + loaded(("prometheus_client",)),
    )
    assert web == {"prometheus_client": True}


def test_the_task_pool_preloads_the_sdk_of_its_route_before_forking_and_no_other(tmp_path, migrated_sqlite):
    """Default route Gemini; the only agent on OpenAI is disabled, so openai stays out."""
    body = (
        "from agents.models import Agent\n"
        "Agent.objects.create(name='Olga', phone='+1', transport='sandbox', llm='gpt-5-mini', disabled=True)\n"
        "import engine.management.commands.runworkers\n"
        "call_command('check')\n"
        "from engine.cluster import GuardedSentinel\n"
        "result['before'] = [m for m in ('engine.tasks', 'llm.planning', 'google.genai') if m in sys.modules]\n"
        "class Probe(GuardedSentinel):\n"
        "    def spawn_cluster(self):\n"
        "        from llm.providers import gemini\n"
        "        result['clients'] = len(gemini._clients)\n"
        f"        {loaded(('engine.tasks', 'llm.planning', *SDKS, *WEB_ONLY, 'telethon'))}\n"
        "    def guard(self):\n"
        "        pass\n"
        "Probe().start()\n"
    )
    result = run_fresh(
        tmp_path,
        migrated_sqlite,
        "runworkers",
        body,
        DEFAULT_AGENT_LLM="gemini",
        GOOGLE_GEMINI_API_KEY="test",
        OPENAI_API_KEY="test",
    )
    assert result.pop("before") == []
    assert result.pop("clients") == 1  # the client the workers' calls reuse
    assert {name for name, present in result.items() if present} == {
        "engine.tasks",
        "llm.planning",
        "google.genai",
    }


def test_without_preload_the_pool_forks_its_workers_before_loading_the_llm_stack(tmp_path, migrated_sqlite):
    body = (
        "import engine.management.commands.runworkers\n"
        "from engine.cluster import GuardedSentinel\n"
        "class Probe(GuardedSentinel):\n"
        "    def spawn_cluster(self):\n"
        f"        {loaded(('llm.planning', *SDKS))}\n"
        "    def guard(self):\n"
        "        pass\n"
        "Probe().start()\n"
    )
    result = run_fresh(
        tmp_path,
        migrated_sqlite,
        "runworkers",
        body,
        CINDY_PRELOAD_TASK_MODULES="false",
        GOOGLE_GEMINI_API_KEY="t",
    )
    assert result == {"llm.planning": False, "google.genai": False, "openai": False}


@pytest.mark.django_db
def test_the_providers_preloaded_are_the_default_routes_and_each_enabled_agents(settings):
    settings.DEFAULT_AGENT_LLM = "gemini"
    assert task_providers() == {"gemini"}
    Agent.objects.create(name="Gail", phone="+1", transport="sandbox", llm="grok")
    Agent.objects.create(name="Dora", phone="+2", transport="sandbox", llm="openrouter", disabled=True)
    Agent.objects.create(name="Nell", phone="+3", transport="sandbox", llm="no-such-model")
    assert task_providers() == {"gemini", "grok"}
    assert task_providers(read_agents=False) == {"gemini"}


@pytest.mark.django_db
def test_the_fallback_routes_providers_are_preloaded_too(settings):
    settings.DEFAULT_AGENT_LLM = "gemini"
    settings.CINDY_LLM_FALLBACK = ["grok"]
    Agent.objects.create(
        name="Gail", phone="+1", transport="sandbox", llm="gemini", llm_fallback=["gpt-5-mini"]
    )
    Agent.objects.create(
        name="Dora", phone="+2", transport="sandbox", llm="gemini", llm_fallback=["openrouter"], disabled=True
    )
    assert task_providers() == {"gemini", "grok", "openai"}
    assert task_providers(read_agents=False) == {"gemini", "grok"}
