"""Tools of the placement process tests: several `runagents --auto` gateways and a worker pool on one
MariaDB database (several writers: SQLite is not the engine for this), many sandbox agents, a message
driver, and reads of who holds what and whether every message was answered exactly once."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cindy_site.startup import STACKS_SIGNAL
from cindy_site.testing.fake_llm import FakeLLMServer
from engine.lifeline import die_with_parent_hook
from engine.tests.chaos import ChaosLLM
from engine.tests.processes import MANAGE, ChildDatabase, child_settings, manage

MARIADB_URL = os.environ.get("CINDY_TEST_MARIADB_URL", "mysql://root@127.0.0.1:3306/cindy")
REDIS_URL = os.environ.get("CINDY_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

#: Runs in a `manage.py shell` child: each stdin line "AGENT<TAB>TEXT" becomes a message from Pat.
DRIVER = """
import sys
from agents.models import Agent
from sandbox.services.chats import sandbox_say
agents = {a.name: a for a in Agent.objects.all()}
for line in sys.stdin:
    name, text = line.rstrip("\\n").split("\\t", 1)
    sandbox_say(agent=agents[name], text=text, as_name="Pat")
    print("sent", flush=True)
"""


def mariadb_or_skip(monkeypatch) -> None:
    """Point ChildDatabase at MariaDB, or skip saying why."""
    from urllib.parse import urlsplit

    parts = urlsplit(MARIADB_URL)
    try:
        import MySQLdb
    except ImportError:
        pytest.skip(
            "the placement process tests need the MySQL driver (requirements/mysql.txt), which the "
            "MariaDB pass installs: they run there (./test.sh --mariadb)"
        )
    try:
        MySQLdb.connect(
            host=parts.hostname,
            port=parts.port or 3306,
            user=parts.username or "root",
            password=parts.password or "",
            connect_timeout=3,
        ).close()
    except Exception as exc:
        pytest.skip(
            f"the placement process tests need MariaDB/MySQL at {parts.hostname}:{parts.port} "
            f"(CINDY_TEST_MARIADB_URL) for several gateways writing at once; it does not answer: {exc}"
        )
    monkeypatch.setenv("DATABASE_URL", MARIADB_URL)


def mariadb_template(request) -> ChildDatabase | None:
    """The run's migrated database (`migrated_database`) when the suite itself runs on the MariaDB
    server of MARIADB_URL (`./test.sh --mariadb`): a Fleet copies it instead of migrating its own
    database (tens of seconds of CPU on MariaDB). None on a SQLite run, where the Fleet migrates."""
    from urllib.parse import urlsplit

    from django.conf import settings

    if not settings.DATABASES["default"]["ENGINE"].endswith("mysql"):
        return None
    template = request.getfixturevalue("migrated_database")
    parts = urlsplit(MARIADB_URL)
    same_server = (template.conn_args["host"], template.conn_args["port"]) == (
        parts.hostname,
        parts.port or 3306,
    )
    return template if same_server else None


def redis_or_skip() -> None:
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except Exception as exc:
        pytest.skip(f"the placement process tests need Redis at {REDIS_URL} (CINDY_TEST_REDIS_URL): {exc}")


def empty_redis() -> None:
    """Empty the Redis database of this test process (CINDY_TEST_REDIS_URL gives each its own)."""
    import redis

    redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).flushdb()


class Fleet:
    """A migrated MariaDB database with `agents` sandbox agents, an LLM server, and the processes."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        agents: int,
        lease_seconds: int,
        suffix: str = "_fleet",
        template: ChildDatabase | None = None,
    ) -> None:
        self.tmp = tmp_path
        self.db = ChildDatabase(tmp_path, suffix=suffix)
        self.llm = FakeLLMServer().start()
        self.model = ChaosLLM(latency=0.02)
        self.llm.set_responder(self.model)
        self.lease_seconds = lease_seconds
        self.env = child_settings(self.db) | {
            "GEMINI_BASE_URL": self.llm.url,
            "GOOGLE_GEMINI_API_KEY": "test",
            "DEFAULT_AGENT_LLM": "gemini",
            "CINDY_LEASE_SECONDS": str(lease_seconds),
            "CINDY_IDLE_PASS_SECONDS": "0.5",
            "CINDY_TICK_SECONDS": "0.2",
            "CINDY_Q_WORKERS": "2",
            "REDIS_URL": REDIS_URL,
        }
        self.processes: dict[str, subprocess.Popen] = {}
        empty_redis()  # no task a killed fleet left queued reaches this one's workers
        self.names = [f"A{n:03d}" for n in range(agents)]
        if template is not None:
            self.db.copy_from(template)  # a copy of a migrated database: a fraction of a second
        else:
            manage(self.env, "migrate", "--noinput", "-v", "0")
        manage(
            self.env,
            "shell",
            "-c",
            "from agents.models import Agent\n"
            f"for name in {self.names!r}:\n"
            "    Agent.objects.create(name=name, phone='+1555' + name[1:], instructions='You are a test.', "
            "transport='sandbox', llm='gemini', start_typing_delay=1, typing_speed=1000)",
        )
        self.driver: subprocess.Popen | None = None
        self.sent = 0

    # --- processes ------------------------------------------------------------------------------

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.log"

    def start(self, name: str, *args: str, prefix: tuple[str, ...] = (), env: dict | None = None) -> None:
        """Start `manage.py ARGS` as process `name` (its own session, so a kill reaches its children)."""
        self.processes[name] = subprocess.Popen(
            [*prefix, sys.executable, MANAGE, *args],
            env=(env or self.env) | {"CINDY_GATEWAY_NAME": name},
            stdout=self.log(name).open("a"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=die_with_parent_hook(),  # a killed test run leaves no gateway behind
        )

    def gateway(self, name: str, *, prefix: tuple[str, ...] = (), env: dict | None = None) -> None:
        self.start(name, "runagents", "--auto", "--capacity", "1000", "--no-workers", prefix=prefix, env=env)

    def kill(self, name: str) -> None:
        os.killpg(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait(10)

    def stop_all(self) -> None:
        if self.driver is not None:
            self.driver.kill()
            self.driver.wait(10)
        for process in self.processes.values():
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait(10)
        self.llm.stop()
        self.db.drop()
        empty_redis()  # nor a later test's probe of the queue (cindy_site/tests/test_redis_mode.py)

    def logs(self) -> str:
        return "\n".join(
            f"--- {name}\n{self.log(name).read_text()[-3000:]}"
            for name in self.processes
            if self.log(name).exists()
        )

    def wait(self, predicate, what: str, deadline: float) -> float:
        """Poll `predicate` until true; returns the seconds it took (fails with the logs after `deadline`)."""
        started = time.monotonic()
        while time.monotonic() - started < deadline:
            if predicate():
                return time.monotonic() - started
            time.sleep(0.1)
        try:
            stuck = self.stuck()
        except Exception as exc:  # the database may be what is stuck: the logs still come
            stuck = f"--- (reading where it stands failed: {exc!r})"
        raise AssertionError(
            f"timed out after {deadline:g} s waiting for {what}; holdings {self.holdings()}\n{stuck}\n{self.logs()}"
        )

    def stuck(self) -> str:
        """What a stalled fleet waits on: the database's sessions and open transactions, and every
        thread's stack of each live process (SIGUSR1: cindy_site.startup), read from their logs."""
        sizes = {name: self.log(name).stat().st_size for name in self.processes if self.log(name).exists()}
        for process in self.processes.values():
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, STACKS_SIGNAL)
        parts = [
            "--- database sessions (id, command, seconds, state, statement)",
            *(
                repr(row)
                for row in self.db.query(
                    "SELECT id, command, time, state, LEFT(info, 200) FROM information_schema.processlist "
                    "WHERE db = DATABASE() AND (command <> 'Sleep' OR time > 5)"
                )
            ),
            "--- open transactions (session, started, state, rows locked, statement)",
            *(
                repr(row)
                for row in self.db.query(
                    "SELECT trx_mysql_thread_id, trx_started, trx_state, trx_rows_locked, "
                    "LEFT(trx_query, 200) FROM information_schema.innodb_trx"
                )
            ),
        ]
        parts += self.unanswered_state()
        time.sleep(1)  # the handlers write at once; the logs are files
        for name, size in sizes.items():
            with self.log(name).open("rb") as log:
                log.seek(size)
                parts.append(f"--- {name}: stacks\n{log.read()[-20000:].decode(errors='replace')}")
        return "\n".join(parts)

    # --- messages -------------------------------------------------------------------------------

    def say(self, agent: str, text: str) -> None:
        if self.driver is None:
            self.driver = subprocess.Popen(
                [sys.executable, MANAGE, "shell", "--no-imports", "-c", DRIVER],
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        assert self.driver.stdin is not None and self.driver.stdout is not None
        self.driver.stdin.write(f"{agent}\t{text}\n")
        self.driver.stdin.flush()
        line = self.driver.stdout.readline()
        assert line.strip() == "sent", f"the message driver failed on {agent!r}: {line!r}"
        self.sent += 1

    def chat_counts(self) -> list[tuple[int, int, int]]:
        """Per sandbox chat: (chat id, messages from the person, messages from the agent)."""
        return [
            (chat, int(inbound), int(outbound))
            for chat, inbound, outbound in self.db.query(
                "SELECT m.chat_id, SUM(u.agent_id IS NULL), SUM(u.agent_id IS NOT NULL) "
                "FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u ON m.sender_id = u.id "
                "GROUP BY m.chat_id"
            )
        ]

    def unanswered_state(self, limit: int = 5) -> list[str]:
        """Where the first unanswered chats stand: their agent, its lease, the mirror's newest
        message against the sandbox's, and the agent's newest graphs with their nodes."""
        chats = [chat for chat, inbound, outbound in self.chat_counts() if outbound < inbound][:limit]
        if not chats:
            return []
        ids = ", ".join(str(int(c)) for c in chats)
        rows = self.db.query(
            "SELECT m.chat_id, a.id, a.name, l.holder, l.expires_at, "
            "(SELECT MAX(message_id) FROM sandbox_sandboxmessage WHERE chat_id = m.chat_id) "
            "FROM sandbox_sandboxmember m JOIN sandbox_sandboxuser u ON u.id = m.user_id "
            "JOIN agents_agent a ON a.id = u.agent_id LEFT JOIN agents_agentlease l ON l.agent_id = a.id "
            f"WHERE m.chat_id IN ({ids})"  # noqa: S608  (ids from the database, as ints)
        )
        parts = ["--- unanswered chats (chat, agent, holder, lease ends, newest sandbox message)"]
        for chat, agent_id, *rest in rows:
            parts.append(repr((chat, *rest)))
            graphs = self.db.query(
                "SELECT g.id, g.status, g.trigger, g.target_message_id, g.created, g.finished, "
                "(SELECT MAX(message_id) FROM conversations_message WHERE conversation_id = c.id) "
                "FROM conversations_taskgraph g JOIN conversations_conversation c ON c.id = g.conversation_id "
                f"WHERE c.agent_id = {int(agent_id)} ORDER BY g.id DESC LIMIT 3"  # noqa: S608
            )
            for graph in graphs:
                nodes = self.db.query(
                    "SELECT kind, status, attempts, lease_owner FROM conversations_tasknode "
                    f"WHERE graph_id = {int(graph[0])} ORDER BY sequence"  # noqa: S608
                )
                parts.append(f"    graph {graph!r} nodes {nodes!r}")
        return parts

    def unanswered(self) -> int:
        return sum(1 for _, inbound, outbound in self.chat_counts() if outbound < inbound)

    def assert_exactly_once(self) -> None:
        """Every message was answered, none twice: each chat has as many answers as messages (one
        message per chat is sent at a time), and no answer text (one per LLM reply) appears twice."""
        counts = self.chat_counts()
        assert sum(inbound for _, inbound, _ in counts) == self.sent
        wrong = [row for row in counts if row[1] != row[2]]
        assert not wrong, (
            f"chats (id, messages, answers) not answered exactly once: {wrong[:10]}\n{self.logs()}"
        )
        doubled = self.db.query(
            "SELECT m.text, COUNT(*) FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u "
            "ON m.sender_id = u.id WHERE u.agent_id IS NOT NULL GROUP BY m.text HAVING COUNT(*) > 1"
        )
        assert not doubled, f"answers sent twice: {doubled[:10]}"

    # --- placement ------------------------------------------------------------------------------

    def holdings(self) -> dict[str, int]:
        """Live leases per gateway name (the gateway id up to its first colon)."""
        counts: dict[str, int] = {}
        for holder, count in self.db.query(
            "SELECT holder, COUNT(*) FROM agents_agentlease WHERE expires_at >= UTC_TIMESTAMP(6) GROUP BY holder"
        ):
            name = holder.split(":", 1)[0]
            counts[name] = counts.get(name, 0) + int(count)
        return counts

    def holders(self) -> dict[str, str]:
        """Agent name → the name of the gateway holding its live lease."""
        return {
            agent: holder.split(":", 1)[0]
            for agent, holder in self.db.query(
                "SELECT a.name, l.holder FROM agents_agentlease l JOIN agents_agent a ON a.id = l.agent_id "
                "WHERE l.expires_at >= UTC_TIMESTAMP(6)"
            )
        }

    def gateway_id(self, name: str) -> str:
        match = re.search(rf"gateway ({re.escape(name)}:\d+:[0-9a-f]+) starting", self.log(name).read_text())
        assert match, f"gateway {name} did not start:\n{self.log(name).read_text()[-3000:]}"
        return match.group(1)
