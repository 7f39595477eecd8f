"""Tools of the chaos suite: a message driver, a scripted LLM that can hold a call, process lookups."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from pathlib import Path

from cindy_site.testing.fake_llm import FakeReply, RecordedRequest
from engine.tests.processes import ChildDatabase, shell_child, wait_for

#: Runs in a `manage.py shell` child: each stdin line "NAME<TAB>TEXT" becomes a sandbox message.
DRIVER = """
import sys
from agents.models import Agent
from sandbox.services.chats import sandbox_say
agent = Agent.objects.get(name="Wendy")
for line in sys.stdin:
    name, text = line.rstrip("\\n").split("\\t", 1)
    sandbox_say(agent=agent, text=text, as_name=name)
    print("sent", flush=True)
"""


class Driver:
    """A long-lived child that sends sandbox messages, so a burst costs no process start per message."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = shell_child(env, DRIVER)

    def say(self, name: str, text: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{name}\t{text}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()  # blocks until the message is committed
        assert line.strip() == "sent", f"the message driver failed on {name!r}: {line!r}"

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


class ChaosLLM:
    """Answers every planning request with one send of a unique text, after a short model latency.

    `hold()` makes the next request wait (at most HOLD_SECONDS) until `release()`, so a worker can be
    killed while it is certainly inside an LLM call.
    """

    HOLD_SECONDS = 30.0

    def __init__(self, latency: float = 0.1) -> None:
        self.latency = latency
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._hold_next = False
        self.held = threading.Event()
        self._released = threading.Event()
        self._pause = threading.Event()

    def __call__(self, request: RecordedRequest) -> FakeReply:
        with self._lock:
            number = next(self._numbers)
            hold, self._hold_next = self._hold_next, False
        if hold:
            self.held.set()
            self._released.wait(self.HOLD_SECONDS)
        else:
            self._pause.wait(self.latency)  # a model's latency; nothing ever sets this event
        text = json.dumps([{"kind": "send", "text": f"reply-{number}"}])
        return FakeReply(text=text, input_tokens=1200, output_tokens=40)

    def hold(self) -> None:
        with self._lock:
            self._hold_next = True
            self.held.clear()
            self._released.clear()

    def release(self) -> None:
        self._released.set()


# --- processes -----------------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return raw.rsplit(")", 1)[1].split()  # fields from the state on: [0] state, [1] ppid, [19] start


def children(pid: int) -> list[int]:
    """Live children of `pid`, oldest first."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat and stat[0] != "Z" and int(stat[1]) == pid:
                found.append((int(stat[19]), int(entry.name)))
    return [p for _, p in sorted(found)]


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def connected_to(pids: list[int], port: int) -> list[int]:
    """Those of `pids` holding an established TCP connection to 127.0.0.1:`port`."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state, inode = fields[2], fields[3], fields[9]
        if state == "01" and int(remote.split(":")[1], 16) == port:
            inodes.add(inode)
    holding = []
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except (FileNotFoundError, PermissionError):
            continue
        for fd in fds:
            try:
                target = fd.readlink().name
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                holding.append(pid)
                break
    return holding


# --- reads of the child database ----------------------------------------------------------------


def pending_chats(db: ChildDatabase) -> list[int]:
    """Chats (by id) with a message from a person that no later agent message follows."""
    rows = db.query(
        "SELECT m.chat_id, MAX(CASE WHEN u.agent_id IS NULL THEN m.message_id ELSE 0 END), "
        "MAX(CASE WHEN u.agent_id IS NOT NULL THEN m.message_id ELSE 0 END) "
        "FROM sandbox_sandboxmessage m JOIN sandbox_sandboxuser u ON m.sender_id = u.id "
        "GROUP BY m.chat_id"
    )
    return sorted(chat for chat, inbound, outbound in rows if outbound < inbound)


def wait_answered(db: ChildDatabase, log: Path, *, deadline: float, what: str) -> None:
    wait_for(lambda: not pending_chats(db), what, log, deadline=deadline)


class EventAwareLLM(ChaosLLM):
    """ChaosLLM that also counts, per event intent ("event-<n>"), the planning requests showing it."""

    def __init__(self, intents: list[str], latency: float = 0.1) -> None:
        super().__init__(latency)
        self.intents = intents
        self.seen: dict[str, int] = dict.fromkeys(intents, 0)

    def __call__(self, request: RecordedRequest) -> FakeReply:
        body = json.dumps(request.json)
        with self._lock:
            for intent in self.intents:
                if intent in body:
                    self.seen[intent] += 1
        return super().__call__(request)


def event_turns(db: ChildDatabase) -> dict[str, int]:
    """Per event id, the finished turns that were for it: their own trigger or a trigger they carried
    (a trigger queued behind a graph is counted where it ran, not where it waited)."""
    done: dict[str, int] = {}
    for trigger, raw in db.query(
        "SELECT `trigger`, context FROM conversations_taskgraph WHERE status = 'done'"
    ):
        context = json.loads(raw) if isinstance(raw, str) else (raw or {})
        items = [{"trigger": trigger, "context": context}, *(context.get("carried") or [])]
        for item in items:
            event = (item.get("context") or {}).get("event")
            if item.get("trigger") == "event" and event:
                done[event["id"]] = done.get(event["id"], 0) + 1
    return done
