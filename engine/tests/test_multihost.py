"""Three `runagents --auto` gateways and a worker pool, each in a network namespace of its own on this
machine, reaching MariaDB, Redis (and the pool, the LLM server) only over their veth link.

300 sandbox agents get a message each while one gateway is SIGKILLed and another has its link cut for
longer than the lease. Every message is answered exactly once; the killed gateway's agents are
re-placed within the lease after their expiry; the cut-off gateway stops driving each of its agents
(self-fencing) before the gateway that takes it over starts driving it; after the link comes back
the cut-off gateway rejoins and the agents spread again.

The addresses are a private /24 (CINDY_TEST_NETNS_SUBNET, default 10.231.7) cut into one /30 per link,
configured only on the veth ends this test creates; the host ends forward to 127.0.0.1 with socat.
Needs root and `ip netns`; skipped otherwise, saying why. It runs alone, when CINDY_TEST_MULTIHOST=1:
`CINDY_TEST_MULTIHOST=1 ./test.sh --mariadb -m multihost engine/tests/test_multihost.py`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from engine.lifeline import die_with_parent_hook
from engine.tests.fleet import MARIADB_URL, REDIS_URL, Fleet, mariadb_or_skip, redis_or_skip

pytestmark = [pytest.mark.slow, pytest.mark.multihost]

AGENTS = 300
LEASE_SECONDS = 8
SUBNET = os.environ.get("CINDY_TEST_NETNS_SUBNET", "10.231.7")
ROLES = ["gw-1", "gw-2", "gw-3", "workers"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


#: What a run names after itself: namespaces `cindy-<pid>-<n>`, host ends `cv<pid>x<n>h`, and the
#: variable its forwarders carry, so that a later run knows a killed run's leftovers by the dead pid.
OWNER_VARIABLE = "CINDY_TEST_NETNS_OWNER"
NAMESPACE = re.compile(r"cindy-(?:(\d+)-)?[\w-]+")
HOST_END = re.compile(r"cv(?:(\d+)x)?\w+h")


def alive(pid: str | None) -> bool:
    return bool(pid) and Path(f"/proc/{pid}").exists()


def clear_leftovers() -> None:
    """Remove what a killed run left behind (its namespaces with their processes, its veth ends, its
    forwarders): left in place, its addresses shadow this run's and a link brought back up routes to
    the dead run's ends. A run whose test process is alive keeps its own."""
    for line in run("ip", "netns", "list").stdout.splitlines():
        ns = (line.split() or [""])[0]
        match = NAMESPACE.fullmatch(ns)
        if match is None or alive(match.group(1)):
            continue
        for pid in run("ip", "netns", "pids", ns).stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        run("ip", "netns", "del", ns)
    for line in run("ip", "-o", "link", "show").stdout.splitlines():
        dev = line.split(":")[1].strip().split("@")[0]
        match = HOST_END.fullmatch(dev)
        if (
            match is not None
            and not alive(match.group(1))
            and SUBNET in run("ip", "-o", "addr", "show", dev).stdout
        ):
            run("ip", "link", "del", dev)
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            command = (proc / "cmdline").read_bytes().split(b"\0")
            if not command[0].endswith(b"socat") or not any(f"bind={SUBNET}.".encode() in a for a in command):
                continue
            owner = re.search(
                rb"(?:^|\0)" + OWNER_VARIABLE.encode() + rb"=(\d+)", (proc / "environ").read_bytes()
            )
            if not alive(owner.group(1).decode() if owner else None):
                os.kill(int(proc.name), signal.SIGKILL)


class Links:
    """One namespace and veth pair per role; socat on each host end forwards to 127.0.0.1."""

    def __init__(self) -> None:
        self.tag = str(os.getpid())
        self.namespaces: dict[str, str] = {}
        self.host_dev: dict[str, str] = {}
        self.host_ip: dict[str, str] = {}
        self.forwarders: list[subprocess.Popen] = []

    def create(self) -> None:
        for index, role in enumerate(ROLES):
            ns, host_dev, ns_dev = (
                f"cindy-{self.tag}-{index}",
                f"cv{self.tag}x{index}h",
                f"cv{self.tag}x{index}n",
            )
            host_ip, ns_ip = f"{SUBNET}.{4 * index + 1}", f"{SUBNET}.{4 * index + 2}"
            steps = [
                ("ip", "netns", "add", ns),
                ("ip", "link", "add", host_dev, "type", "veth", "peer", "name", ns_dev),
                ("ip", "link", "set", ns_dev, "netns", ns),
                ("ip", "addr", "add", f"{host_ip}/30", "dev", host_dev),
                ("ip", "link", "set", host_dev, "up"),
                ("ip", "netns", "exec", ns, "ip", "addr", "add", f"{ns_ip}/30", "dev", ns_dev),
                ("ip", "netns", "exec", ns, "ip", "link", "set", ns_dev, "up"),
                ("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"),
            ]
            for step in steps:
                result = run(*step)
                if step[:3] == ("ip", "netns", "add"):
                    self.namespaces[role] = ns
                if step[:3] == ("ip", "link", "add"):
                    self.host_dev[role] = host_dev
                if result.returncode != 0:
                    raise OSError(f"`{' '.join(step)}` failed: {result.stderr.strip()}")
            self.host_ip[role] = host_ip

    def forward(self, role: str, port: int, to_port: int) -> None:
        self.forwarders.append(
            subprocess.Popen(
                [
                    "socat",
                    f"TCP-LISTEN:{port},bind={self.host_ip[role]},fork,reuseaddr",
                    f"TCP:127.0.0.1:{to_port}",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=os.environ | {OWNER_VARIABLE: self.tag},
                start_new_session=True,  # with the children it forks per connection
                preexec_fn=die_with_parent_hook(),
            )
        )

    def prefix(self, role: str) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.namespaces[role])

    def cut(self, role: str, up: bool = False) -> None:
        result = run("ip", "link", "set", self.host_dev[role], "up" if up else "down")
        assert result.returncode == 0, result.stderr

    def stop_forwarding(self) -> None:
        """Kill the forwarders (and the connections they carry: a cut-off gateway's would keep its
        MariaDB session, and its locks, open until the server gives up on it)."""
        for forwarder in self.forwarders:
            if forwarder.poll() is None:
                os.killpg(forwarder.pid, signal.SIGKILL)
            forwarder.wait(10)
        self.forwarders = []

    def destroy(self) -> None:
        self.stop_forwarding()
        for dev in self.host_dev.values():
            run("ip", "link", "del", dev)
        for ns in self.namespaces.values():
            run("ip", "netns", "del", ns)


@pytest.fixture
def links():
    if os.environ.get("CINDY_TEST_MULTIHOST") != "1":
        pytest.skip(
            "the multi-host test runs alone, with the machine to itself (about two minutes of three "
            "gateways, a worker pool and 300 agents, timed against the lease): "
            "CINDY_TEST_MULTIHOST=1 ./test.sh --mariadb -m multihost engine/tests/test_multihost.py"
        )
    if os.geteuid() != 0:
        pytest.skip("the multi-host test creates network namespaces (`ip netns add`): it needs root")
    if shutil.which("ip") is None or shutil.which("socat") is None:
        pytest.skip("the multi-host test needs `ip` (iproute2) and `socat` installed")
    clear_leftovers()
    in_use = [line for line in run("ip", "-o", "addr").stdout.splitlines() if f" {SUBNET}." in line]
    if in_use:
        pytest.fail(
            f"the addresses {SUBNET}.0/24 are in use on this machine (another multi-host run, or the "
            f"network's own): {in_use[0].split()[1]}; set CINDY_TEST_NETNS_SUBNET to a free private /24"
        )
    links = Links()
    try:
        links.create()
    except OSError as exc:
        links.destroy()
        pytest.skip(f"network namespaces cannot be made here: {exc}")
    try:
        yield links
    finally:
        links.destroy()


STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})"


def stamped(text: str, pattern: str) -> dict[str, dt.datetime]:
    """Agent name → the time of the first log line matching `pattern` (its group 2 is the agent)."""
    found: dict[str, dt.datetime] = {}
    for match in re.finditer(STAMP + r" " + pattern, text):
        found.setdefault(match.group(2), dt.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f"))
    return found


def lease_end(fleet: Fleet, agents: list[str]) -> float:
    """When the last of `agents`' leases runs out (time.time()), as the database has it now."""
    names = ", ".join(f"'{a}'" for a in agents)
    (latest,) = fleet.db.query(
        "SELECT MAX(l.expires_at) FROM agents_agentlease l JOIN agents_agent a ON a.id = l.agent_id "
        f"WHERE a.name IN ({names})"  # noqa: S608  (names made by the test)
    )[0]
    return latest.replace(tzinfo=dt.UTC).timestamp()


def test_three_gateways_in_namespaces_survive_a_kill_and_a_cut_link(links, tmp_path, monkeypatch):
    started = time.monotonic()
    mariadb_or_skip(monkeypatch)
    redis_or_skip()
    fleet = Fleet(tmp_path, agents=AGENTS, lease_seconds=LEASE_SECONDS, suffix="_multihost")
    try:
        db_port = urlsplit(MARIADB_URL).port or 3306
        redis = urlsplit(REDIS_URL)
        llm_port = urlsplit(fleet.llm.url).port
        envs = {}
        for role in ROLES:
            links.forward(role, 3306, db_port)
            links.forward(role, 6379, redis.port or 6379)
            host = links.host_ip[role]
            # Timeouts, so that calls stuck on a cut link fail instead of hanging the process forever.
            envs[role] = fleet.env | {
                "DATABASE_URL": f"mysql://root@{host}:3306/{fleet.db.name}"
                "?connect_timeout=3&read_timeout=10&write_timeout=10",
                "REDIS_URL": f"redis://{host}:6379{redis.path or '/15'}",
            }
        links.forward("workers", 8080, llm_port)
        envs["workers"]["GEMINI_BASE_URL"] = f"http://{links.host_ip['workers']}:8080"
        time.sleep(0.3)  # socat binds its listeners

        fleet.start("workers", "runworkers", prefix=links.prefix("workers"), env=envs["workers"])
        for role in ("gw-1", "gw-2", "gw-3"):
            fleet.gateway(role, prefix=links.prefix(role), env=envs[role])
        fleet.wait(lambda: fleet.holdings() == {"gw-1": 100, "gw-2": 100, "gw-3": 100}, "an even spread", 120)
        placed = time.monotonic() - started

        names = fleet.names
        on_1 = sorted(a for a, h in fleet.holders().items() if h == "gw-1")
        for name in names[:100]:
            fleet.say(name, f"first to {name}")
        fleet.kill("gw-1")
        expiry_1 = lease_end(fleet, on_1)  # gw-1 renews nothing any more
        for name in names[100:200]:
            fleet.say(name, f"second to {name}")

        def re_placed(agents: list[str], dead: str) -> bool:
            now = fleet.holders()
            return all(now.get(a) not in (None, dead) for a in agents)

        fleet.wait(
            lambda: re_placed(on_1, "gw-1"), "the killed gateway's agents re-placed", 8 * LEASE_SECONDS
        )
        after_kill = time.time() - expiry_1
        # Each orphaned agent has a new holder within the lease time of its lease running out.
        assert after_kill <= LEASE_SECONDS, (
            f"killed gateway's agents re-placed {after_kill:.1f} s after expiry\n{fleet.logs()}"
        )
        fleet.wait(lambda: fleet.holdings() == {"gw-2": 150, "gw-3": 150}, "an even spread over two", 30)

        on_2 = sorted(a for a, h in fleet.holders().items() if h == "gw-2")
        links.cut("gw-2")
        cut = time.monotonic()
        expiry_2 = lease_end(fleet, on_2)  # nor, from now on, does gw-2
        for name in names[200:]:
            fleet.say(name, f"third to {name}")
        fleet.wait(
            lambda: re_placed(on_2, "gw-2"), "the cut-off gateway's agents re-placed", 8 * LEASE_SECONDS
        )
        after_cut = time.time() - expiry_2
        assert after_cut <= LEASE_SECONDS, (
            f"cut-off gateway's agents re-placed {after_cut:.1f} s after expiry\n{fleet.logs()}"
        )
        assert fleet.holdings() == {"gw-3": AGENTS}

        # The cut-off gateway let go of each agent before gw-3 took it.
        fenced = stamped(
            fleet.log("gw-2").read_text(), r"ERROR engine.gateway: agent (\w+): lease not renewed"
        )
        taken = stamped(
            fleet.log("gw-3").read_text(), r"INFO engine.gateway: holding agent (\w+) \(took over"
        )
        assert set(on_2) <= set(fenced), f"gw-2 did not fence {sorted(set(on_2) - set(fenced))[:5]}"
        assert set(on_2) <= set(taken)
        late = [a for a in on_2 if fenced[a] >= taken[a]]
        assert not late, f"gw-3 took agents before gw-2 let go of them: {late[:5]}"

        fleet.wait(lambda: fleet.unanswered() == 0, "every message answered", 180)
        fleet.assert_exactly_once()

        # The link comes back after more than a lease: gw-2 rejoins and the agents spread again.
        assert time.monotonic() - cut > LEASE_SECONDS
        links.cut("gw-2", up=True)
        fleet.wait(lambda: fleet.holdings() == {"gw-2": 150, "gw-3": 150}, "gw-2 rejoining", 90)
        for name in names:
            fleet.say(name, f"again to {name}")
        fleet.wait(lambda: fleet.unanswered() == 0, "every later message answered", 180)
        fleet.assert_exactly_once()
        took = time.monotonic() - started
        print(
            f"multi-host: spread in {placed:.1f} s; agents re-placed {after_kill:.1f} s after the killed "
            f"gateway's leases expired, {after_cut:.1f} s after the cut-off one's (lease {LEASE_SECONDS} s); "
            f"whole run {took:.0f} s"
        )
    finally:
        for process in fleet.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
        links.stop_forwarding()  # before the database is dropped: see stop_forwarding
        fleet.stop_all()
