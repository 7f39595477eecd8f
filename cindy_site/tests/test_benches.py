"""The benches cannot flatter: a figure beside a goal is the statistic the goal is stated for, and no
figure they print can be negative (bench/figures.py). Fast: the benches' declarations and reductions
run on sample inputs; no bench part, process or database is started."""

from __future__ import annotations

import datetime as dt
import importlib
import re
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.models import Agent

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench():
    """The bench modules that print figures through bench/figures.py, imported as the benches import
    each other (their directory on the path)."""
    sys.path.insert(0, str(BENCH))
    try:
        names = sorted(
            path.stem for path in BENCH.glob("bench_*.py") if "from figures import" in path.read_text()
        )
        yield SimpleNamespace(
            figures=importlib.import_module("figures"),
            modules={name: importlib.import_module(name) for name in names},
        )
    finally:
        sys.path.remove(str(BENCH))


def declaration_problems(figures, modules: dict[str, object]) -> list[str]:
    return [
        f"{name}: {problem}"
        for name, module in modules.items()
        for declared in figures.declared_in(vars(module))
        for problem in declared.problems()
    ]


def test_the_scale_and_engine_benches_print_through_the_figures(bench):
    assert {"bench_engine", "bench_scale"} <= set(bench.modules)
    for name, module in bench.modules.items():
        assert bench.figures.declared_in(vars(module)), f"bench/{name}.py imports figures but declares none"


def test_every_declared_figure_is_the_statistic_its_goal_is_stated_for(bench):
    assert declaration_problems(bench.figures, bench.modules) == []


def test_the_check_refuses_the_old_idle_figure_a_median_beside_a_time_averaged_goal(bench):
    figures, goal = bench.figures, bench.modules["bench_scale"].IDLE.goal
    old = SimpleNamespace(IDLE=figures.Declared("idle CPU", figures.Statistic.MEDIAN, "% of a core", goal))
    assert declaration_problems(figures, {"planted": old}) == [
        'planted: idle CPU: declared as the median beside a goal for the time average ("≤ 1% of a core, '
        'time-averaged")'
    ]
    with pytest.raises(figures.FigureError, match="the median compared to a goal for the time average"):
        figures.Figure("idle CPU", 0.005, figures.Statistic.MEDIAN, "% of a core", goal)


def test_a_goal_whose_wording_does_not_say_its_statistic_is_refused(bench):
    figures = bench.figures
    silent = figures.Goal(0.01, "≤ 1% of a core", figures.Statistic.TIME_AVERAGE)
    declared = figures.Declared("idle CPU", figures.Statistic.TIME_AVERAGE, "% of a core", silent)
    assert declaration_problems(figures, {"planted": SimpleNamespace(IDLE=declared)}) == [
        'planted: goal "≤ 1% of a core" is for the time average but does not say so: put one of '
        "'time-averaged', 'time average' in its wording"
    ]
    mixed = figures.Goal(25, "≤ 25 ms, median, time-averaged", figures.Statistic.TIME_AVERAGE)
    assert "also says ['median']" in mixed.problems()[0]


def _windows(figures, shares: list[float], seconds: float = 10.0):
    return figures.Windows(tuple((share * seconds, seconds) for share in shares))


def test_idle_is_the_time_average_of_the_span_where_the_median_of_windows_met_the_goal(bench):
    figures, scale = bench.figures, bench.modules["bench_scale"]
    # The pattern: a busy window every 30 s among quiet 10 s windows.
    windows = _windows(figures, [0.005, 0.005, 0.025] * 3)
    old_figure = statistics.median(share for share in (0.005, 0.005, 0.025) * 3)
    assert old_figure <= scale.IDLE.goal.bound  # what the bench printed as "meets"
    text = scale.idle_text(windows, windows)
    assert text.startswith("time average 1.17% of a core; goal ≤ 1% of a core, time-averaged, MISSES")
    assert "worst 2.50% of a core" in text
    assert "median of the windows 0.50%, not compared" in text


def test_the_time_average_weighs_each_window_by_what_it_lasted(bench):
    windows = bench.figures.Windows(((0.3, 10.0), (0.0, 20.0)))
    assert windows.time_average == pytest.approx(0.01)
    assert windows.worst == pytest.approx(0.03)


def test_inbound_cpu_per_message_is_the_mean_beside_its_goal(bench):
    scale = bench.modules["bench_scale"]
    per_message = [0.015] * 19 + [0.3]  # one message in a periodic burst
    text = scale.inbound_text(per_message, per_message)
    assert text.startswith("mean 29.2 ms; goal ≤ 15 ms per message, mean, MISSES")
    assert "worst 300 ms" in text
    assert "median 15 ms, not compared" in text


def test_a_message_whose_cpu_less_idle_is_negative_is_refused_not_printed(bench):
    scale = bench.modules["bench_scale"]
    with pytest.raises(bench.figures.FigureError, match="cannot be negative"):
        scale.inbound_text([0.015, -0.002], [0.015])


def _agent() -> Agent:
    return Agent(name="Wendy", start_typing_delay=1, typing_speed=1000)


def test_the_old_latency_of_an_agent_already_online_was_negative_and_is_refused(bench):
    from engine.handlers.send import typing_seconds

    engine_bench = bench.modules["bench_engine"]
    said = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
    replied = said + dt.timedelta(milliseconds=33)  # online: no start delay, 3 ms to type "hi!"
    old = engine_bench.user_wait_seconds(
        said_at=said, replied_at=replied, typing_applied=typing_seconds(_agent(), "hi!")
    )
    assert old == pytest.approx(-0.970)  # the old subtraction: the start delay it never paid
    with pytest.raises(bench.figures.FigureError, match="cannot be negative"):
        engine_bench.latency_text([0.030, old], [0.030])


def test_the_latency_subtracts_the_typing_the_send_node_recorded(bench):
    engine_bench = bench.modules["bench_engine"]
    said = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
    online = engine_bench.typing_applied(_agent(), {"start_delay": 0, "typing_until": "x"}, "hi!")
    offline = engine_bench.typing_applied(_agent(), {"start_delay": 1}, "hi!")
    assert (online, offline) == (pytest.approx(0.003), pytest.approx(1.003))
    waits = [
        engine_bench.user_wait_seconds(
            said_at=said, replied_at=said + dt.timedelta(seconds=seconds), typing_applied=typing
        )
        for seconds, typing in ((0.033, online), (1.043, offline))
    ]
    assert waits == [pytest.approx(0.030), pytest.approx(0.040)]
    assert engine_bench.latency_text(waits, waits).startswith("mean 35.0 ms; goal ≤ 300 ms, mean, meets")


def test_a_send_node_without_a_recorded_start_delay_is_named(bench):
    with pytest.raises(RuntimeError, match="no start_delay recorded"):
        bench.modules["bench_engine"].typing_applied(_agent(), {"text": "hi!"}, "hi!")


#: Verdicts the benches still print on their own, not through bench/figures.py, by module: each goes
#: when its figures are declared. Their statistics are not checked here (medians of runs for claims,
#: RSS and parse time, mean shares for the prompt prefixes, a p95 and counts in the failover).
OWN_VERDICTS = {
    "bench_engine": 4,  # claims, dispatch, gateway RSS, worker RSS
    "bench_failover": 1,
    "bench_memory": 2,
    "bench_parsing": 1,
    "bench_prompt": 1,
    "bench_prompt_entries": 3,
    "bench_request": 1,
    "bench_soak": 2,
}


def test_no_bench_prints_a_verdict_of_its_own_beyond_the_known_ones():
    found = {}
    for path in sorted(BENCH.glob("bench_*.py")):
        count = len(re.findall(r"MISSES|NOT met|\"OVER\"", path.read_text()))
        if count:
            found[path.stem] = count
    assert found == OWN_VERDICTS, (
        "a bench prints a verdict of its own: declare the figure in bench/figures.py and print it through "
        "Declared.figure(...).line() (or, once one is gone, lower its count in OWN_VERDICTS)"
    )


@pytest.fixture
def failover_bench():
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("bench_failover")
    finally:
        sys.path.remove(str(BENCH))


def test_the_failover_bench_s_help_lists_its_options_and_runs_nothing(failover_bench, capsys):
    with pytest.raises(SystemExit) as exited:  # before any round: argparse answers --help and exits
        failover_bench.main(["--help"])

    assert exited.value.code == 0
    usage = capsys.readouterr().out
    for option in (
        "--rounds N",
        "--outage SECONDS",
        "--outage-seconds SECONDS",
        "--rate PER_SECOND",
        "--agents N",
    ):
        assert option in usage


def test_the_failover_bench_reads_its_options_and_hands_them_to_each_round(failover_bench):
    args = failover_bench.parse_args(
        ["--rounds", "3", "--outage-seconds", "20", "--rate", "1.5", "--agents", "10"]
    )
    assert (args.rounds, args.outage, args.rate, args.agents) == (3, 20.0, 1.5, 10)
    defaults = failover_bench.parse_args([])
    assert (defaults.rounds, defaults.outage, defaults.rate, defaults.agents) == (2, 120.0, 2.0, 100)
    for bad in (["--rounds", "0"], ["--outage", "-5"], ["--rate", "fast"], ["--outage"]):
        with pytest.raises(SystemExit) as refused:
            failover_bench.parse_args(bad)
        assert refused.value.code == 2

    command = failover_bench.round_command({"SECRET_KEY": "x"}, args.outage, args.rate, args.agents)
    mode = command[command.index("--round") + 1 :]
    assert mode == ['{"SECRET_KEY": "x"}', "20.0", "1.5", "10"]  # ENV OUTAGE RATE AGENTS, run_round's order


def test_the_probe_s_own_threads_are_left_out_of_the_tree_s_cpu(bench):
    """The gateway probe's threads (bench/gateway_probe.py) name themselves `bench-...`; the tree's CPU
    (bench_scale.py) counts every other thread of the process, and not them."""
    import os
    import threading

    probe, scale = (
        importlib.import_module("gateway_probe"),
        bench.modules["bench_scale"],
    )  # bench/ on the path
    named, plain, done = threading.Event(), threading.Event(), threading.Event()
    ids = {}

    def run(name: str | None, ready: threading.Event) -> None:
        if name:
            probe.bench_thread(name)
        ids[name] = threading.get_native_id()
        ready.set()
        done.wait()

    threads = [
        threading.Thread(target=run, args=("probe", named)),
        threading.Thread(target=run, args=(None, plain)),
    ]
    for thread in threads:
        thread.start()
    try:
        assert named.wait(10) and plain.wait(10)
        counted = {tid for _pid, tid in scale._thread_cpu(os.getpid())}
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert ids[None] in counted
    assert ids["probe"] not in counted
    assert threading.get_native_id() in counted


def test_a_garbage_collection_the_probe_did_not_see_is_still_the_loop_s_worst_stall(bench, tmp_path):
    """A collection holds the interpreter: the loop cannot run. The probe thread, asleep between its
    callbacks, misses one that starts meanwhile; bench_thousand.py counts every collection the
    gateway timed (bench/gateway_probe.py, `gc.callbacks`) as a stall all the same."""
    import json

    record = tmp_path / "probe.json"
    record.write_text(
        json.dumps(
            {
                "passes": [[10.2, 0.2, False]],
                "stalls": [[10.05, 0.012]],  # all the probe saw
                "probes": 100,
                "stacks": [],
                "steps": {"ingest": [[10.2, 0.19]]},
                "slow": [[10.2, 0.2, [["ingest", 0.19]]]],
                "collections": [[10.18, 0.148, 2, 0], [10.5, 0.004, 0, 0], [99.0, 0.9, 2, 0]],
            }
        )
    )
    figures = bench.modules["bench_thousand"]._probe_figures(json.loads(record.read_text()), 10.0, 20.0)
    assert figures["stall_worst"] == pytest.approx(148)  # not 12: the collection inside the span
    assert figures["collections_over"] == 1
    assert figures["slow"] == [[pytest.approx(200), [["ingest", 0.19]]]]
