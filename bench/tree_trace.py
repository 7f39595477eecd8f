"""Where a real process tree spends an inbound message, statement by statement: a diagnostic beside
`bench_scale.py tree` (issue 35). Prints figures; asserts nothing.

A real `runagents` with 100 sandbox agents and its task pool, started as `bench_scale.py`'s `tree`
part starts it (default settings), on a temporary SQLite database; every process of the tree loads
`bench/tree_trace_hook/sitecustomize.py`, which records each SQL statement with its time and the
thread's CPU time then. Two warm-up messages per chat, 30 s idle, then MESSAGES messages, each
settled before the next. Per tree it prints the CPU per message up to the planning request (less the
idle CPU, as `bench_scale.py` computes it) and the raw CPU of each process and thread up to the
request. With `--against REF` it measures a checkout of REF first, then lines up, statement by
statement, what the gateway's database thread and the task workers run from the message to the
request in the two trees, with the thread's CPU since its previous statement (the mean over the
messages that ran the usual sequence): the CPU that differs, and the statement it comes before.

Run: .venv/bin/python bench/tree_trace.py [--against REF] [--messages N]
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MESSAGES = 20
IDLE_SECONDS = 30.0


def _option(name: str, default: str | None = None) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else default


# --- one tree, in a process of its own (CINDY_BENCH_ROOT names it, as in bench_scale.py) -----------


def _dump(bs, root_pid: int, out: Path, tag: str) -> None:
    """Ask every process of the tree to write its statements, and keep them under out/tag."""
    for pid in bs.tree_pids(root_pid):
        try:
            os.kill(pid, signal.SIGUSR2)
        except OSError:
            pass
    time.sleep(1.0)
    (out / tag).mkdir(exist_ok=True)
    for path in out.glob("sql-*.json"):
        path.rename(out / tag / path.name)


def _roles(bs, root_pid: int) -> dict[int, str]:
    found = {}
    for pid in bs.tree_pids(root_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
        except OSError:
            continue
        found[pid] = command.split("manage.py")[-1].strip()[:40] if "manage.py" in command else command[:40]
    return found


def measure_tree(out: Path, messages: int) -> None:
    """The tree at CINDY_BENCH_ROOT: writes out/result.json and out/after/sql-PID.json."""
    import bench_scale as bs

    from cindy_site.testing.fake_llm import FakeLLMServer

    server = FakeLLMServer().start()
    server.set_default_reply(json.dumps([{"kind": "send", "text": "hi!"}]))
    agents = bs._agents()
    log = out / "gateway.log"
    hook = {"CINDY_TRACE_DIR": str(out), "CINDY_TRACE_SQL": "1", "PYTHONPATH": str(HERE / "tree_trace_hook")}
    process = bs._start({**bs._env(server.url), **hook}, log)
    per = bs._PerMessage(process.pid)
    try:
        chosen = [agents[(i * 37) % len(agents)] for i in range(messages)]
        for warm in range(2):
            for agent in dict.fromkeys(chosen):
                bs._say_and_wait(agent, f"warm-up {warm}", log)
                bs._finished(agent, log)
        time.sleep(10)
        before, at = bs.tree_cpu(process.pid), time.monotonic()
        time.sleep(IDLE_SECONDS)
        per.idle_rate = bs.cpu_between(before, bs.tree_cpu(process.pid)) / (time.monotonic() - at)
        server.set_responder(per)
        _dump(bs, process.pid, out, "before")
        marks, to_request, by_thread = [], [], collections.Counter()
        for i, agent in enumerate(chosen):
            del per.at_request[:]
            start, wall = bs.tree_cpu(process.pid), time.monotonic()
            bs._say_and_wait(agent, f"message {i}", log)
            bs._finished(agent, log)
            cpu, at = per.at_request[0]
            marks.append((wall, at))
            to_request.append((bs.cpu_between(start, cpu) - per.idle_rate * (at - wall)) * 1000)
            for key, seconds in cpu.items():
                by_thread[f"{key[0]}/{key[1]}"] += seconds - start.get(key, 0.0)
        _dump(bs, process.pid, out, "after")
        result = {
            "to_request_ms": to_request,
            "idle_rate": per.idle_rate,
            "marks": marks,
            "roles": _roles(bs, process.pid),
            "by_thread_ms": {k: v * 1000 / messages for k, v in by_thread.items()},
        }
        (out / "result.json").write_text(json.dumps(result))
    finally:
        server.set_responder(None)
        bs.stop_process(process)
        server.stop()


# --- reading the results ---------------------------------------------------------------------------


def _load(out: Path) -> tuple[dict, list[tuple], dict[tuple[int, int], str]]:
    result = json.loads((out / "result.json").read_text())
    roles = {int(pid): role for pid, role in result["roles"].items()}
    events, threads = [], {}
    for path in (out / "after").glob("sql-*.json"):
        dump = json.loads(path.read_text())
        pid = dump["pid"]
        threads.update({(pid, int(tid)): name for tid, name in dump["threads"].items()})
        events += [
            (t, cpu, roles.get(pid, "?"), (pid, th), (sql, shape)) for t, cpu, th, sql, shape in dump["trace"]
        ]
    events.sort()
    return result, events, threads


def summary(label: str, out: Path) -> None:
    result, _events, threads = _load(out)
    ms = result["to_request_ms"]
    roles = {int(pid): role for pid, role in result["roles"].items()}
    print(
        f"{label}: CPU of the tree per message up to the planning request, less idle: mean "
        f"{statistics.fmean(ms):.1f} ms, median {statistics.median(ms):.1f} ms, {len(ms)} messages; idle "
        f"{result['idle_rate']:.2%} of a core. Raw CPU up to the request by process and thread:"
    )
    merged: collections.Counter = collections.Counter()
    for key, value in result["by_thread_ms"].items():
        pid, tid = map(int, key.split("/"))
        merged[f"{roles.get(pid, '?')} {threads.get((pid, tid), 'thread')}"] += value
    for name, value in merged.most_common():
        if value >= 0.05:
            print(f"  {value:6.2f} ms  {name}")


def _sequences(out: Path, role: str, thread: str) -> list[list[tuple[float, tuple[str, str]]]]:
    """For each message: the statements of `role`'s `thread` threads from the message to the
    request, each with the thread's CPU (ms) since its previous statement."""
    result, events, _threads = _load(out)
    chosen = [e for e in events if role in e[2] and e[3][1].startswith(thread)]
    found = []
    for wall, at in result["marks"]:
        last = {e[3]: e[1] for e in chosen if e[0] < wall}
        seq = []
        for t, cpu, _role, key, sql in chosen:
            if wall <= t <= at:
                seq.append(((cpu - last[key]) * 1000 if key in last else 0.0, sql))
                last[key] = cpu
        found.append(seq)
    return found


def _usual(
    seqs: list[list[tuple[float, tuple[str, str]]]],
) -> tuple[list[tuple[float, tuple[str, str]]], int]:
    """The mean CPU before each statement over the messages that ran the most common sequence."""
    length = collections.Counter(len(s) for s in seqs).most_common(1)[0][0]
    used = [s for s in seqs if len(s) == length]
    return [(statistics.fmean(s[i][0] for s in used), used[0][i][1]) for i in range(length)], len(used)


def compare(before: Path, after: Path, role: str, thread: str) -> None:
    old, n_old = _usual(_sequences(before, role, thread))
    new, n_new = _usual(_sequences(after, role, thread))
    print(
        f"{role} {thread}: CPU before each statement from the message to the request, mean ms "
        f"(before over {n_old} messages, this tree over {n_new}): {sum(c for c, _ in old):.2f} → "
        f"{sum(c for c, _ in new):.2f} ms, {len(old)} → {len(new)} statements"
    )
    i = j = 0
    while i < len(old) or j < len(new):
        # Statements are matched on their verb and first table (the same across the apps' renames).
        if i < len(old) and j < len(new) and old[i][1][1] == new[j][1][1]:
            print(f"  {old[i][0]:6.2f} {new[j][0]:6.2f}  {new[j][1][0][:100]}")
            i, j = i + 1, j + 1
        elif j < len(new) and (i >= len(old) or any(old[i][1][1] == s[1] for _, s in new[j + 1 : j + 4])):
            print(f"  {'':6} {new[j][0]:6.2f}  only here: {new[j][1][0][:90]}")
            j += 1
        else:
            print(f"  {old[i][0]:6.2f} {'':6}  only before: {old[i][1][0][:90]}")
            i += 1


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return
    against, messages = _option("--against"), int(_option("--messages", str(MESSAGES)))
    root = HERE.parent
    from processes import checkout

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        trees = [("this tree", root, Path(tmp) / "this")]
        if against:
            before = stack.enter_context(checkout(root, against, Path(tmp) / "before-tree"))
            trees.insert(0, (f"before: {against}", before, Path(tmp) / "before"))
        for label, tree, out in trees:
            out.mkdir()
            env = {**os.environ, "CINDY_BENCH_ROOT": str(tree)}
            command = [sys.executable, __file__, "--tree", str(out), "--messages", str(messages)]
            subprocess.run(command, env=env, check=True)
            summary(label, out)
        if against:
            compare(trees[0][2], trees[1][2], "runagents", "ThreadPool")
            compare(trees[0][2], trees[1][2], "runworkers", "MainThread")


if __name__ == "__main__":
    if "--tree" in sys.argv:
        sys.path.insert(0, str(HERE))  # bench_scale.py, which reads CINDY_BENCH_ROOT
        import bench_scale

        for key in ("DATABASE_URL", "REDIS_URL"):
            os.environ.pop(key, None)
        bench_scale.setup_django(
            {
                "SECRET_KEY": "bench-only",
                "CINDY_ENV_FILE": os.devnull,
                "LOG_LEVEL": "ERROR",
                "CINDY_SQLITE_PATH": str(Path(_option("--tree")) / "db.sqlite3"),
            }
        )
        measure_tree(Path(_option("--tree")), int(_option("--messages", str(MESSAGES))))
    else:
        main()
