"""The harness's own cost: CPU from captured /proc files, and the one line every surface shows
(views/harness_cost.py): `run`, `runs show` (text and --json), `runs compare`, the reports and
the web say the same thing, and a run recorded before it says "not recorded", never 0."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from study_fakes import make_record
from typer.testing import CliRunner

from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app as runs_app
from pgrig.metrics import harness_cost as hc
from pgrig.reports import markdown
from pgrig.reports.run_report import compare_document, run_document
from pgrig.views import compare, run_summary
from pgrig.views import harness_cost as view

# /proc/PID/stat lines captured on the reference machine (pgrig's python, a child, a backend);
# the second set 10 s later. utime + stime are fields 14 and 15, starttime field 22.
PGRIG_T0 = (
    "4100 (pgrig) S 4000 4100 4000 34816 4100 4194304 52000 0 0 0 310 42 0 0 20 0 9 0 "
    "561071 903133440 40300 18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 1 0 0 0 0 0"
)
PGRIG_T1 = PGRIG_T0.replace(" 310 42 ", " 398 61 ")  # +107 ticks
HELPER_T1 = (
    "4300 (my (odd) helper) S 4100 4100 4000 34816 4100 4194304 90 0 0 0 12 3 0 0 20 0 1 0 "
    "562000 3133440 403 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
)
BACKEND_T0 = (
    "8301 (postgres) S 8277 8277 8277 0 -1 4194304 9788 0 1 0 200 100 0 0 20 0 1 0 "
    "457960 223969280 7782 18446744073709551615 1 1 0 0 0 0 0 24129536 84487 1 0 0 17 0 0 0 0 0 0"
)
BACKEND_T1 = BACKEND_T0.replace(" 200 100 ", " 230 110 ")  # +40 ticks
REUSED_T1 = BACKEND_T0.replace(" 457960 ", " 560000 ").replace(" 200 100 ", " 5 5 ")


def _proc(root: Path, stats: dict[int, str], kids: dict[int, list[int]]) -> str:
    for pid, line in stats.items():
        (root / str(pid) / "task" / str(pid)).mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "stat").write_text(line + "\n")
        (root / str(pid) / "task" / str(pid) / "children").write_text(
            " ".join(map(str, kids.get(pid, []))) + (" " if kids.get(pid) else "")
        )
    return str(root)


def test_parse_stat_reads_times_past_a_name_with_parentheses() -> None:
    t = hc.parse_stat(HELPER_T1)
    assert t == hc.ProcTimes(pid=4300, ppid=4100, ticks=15, started=562000)
    assert hc.parse_stat("garbage") is None


def test_tree_leaves_out_the_load_generator(tmp_path: Path) -> None:
    # pgrig 4100 -> helper 4300 and pgbench 4200 -> pgbench's child 4201
    stats = {4100: PGRIG_T1, 4300: HELPER_T1, 4200: HELPER_T1, 4201: HELPER_T1}
    proc = _proc(tmp_path, stats, {4100: [4300, 4200], 4200: [4201]})
    assert sorted(hc.tree(4100, proc=proc)) == [4100, 4200, 4201, 4300]
    assert sorted(hc.tree(4100, exclude=[4200], proc=proc)) == [4100, 4300]


def test_cpu_seconds_deltas_new_processes_and_reused_pids() -> None:
    t0 = {p.pid: p for p in map(hc.parse_stat, (PGRIG_T0, BACKEND_T0)) if p}
    t1 = {p.pid: p for p in map(hc.parse_stat, (PGRIG_T1, HELPER_T1, BACKEND_T1)) if p}
    # pgrig +107, the helper born inside the span: its whole 15, the backend +40
    assert hc.cpu_seconds(t0, t1, clk_tck=100) == pytest.approx(1.62)
    reused = {p.pid: p for p in [hc.parse_stat(REUSED_T1)] if p}
    assert hc.cpu_seconds(t0, reused, clk_tck=100) == pytest.approx(0.10)  # not 10 - 300
    gone: dict[int, hc.ProcTimes] = {}
    assert hc.cpu_seconds(t0, gone) == 0.0


def test_snapshot_from_captured_proc(tmp_path: Path) -> None:
    proc = _proc(tmp_path, {4100: PGRIG_T1, 8301: BACKEND_T1}, {})
    snap = hc.snapshot([4100, 8301, 9999], proc)
    assert sorted(snap) == [4100, 8301] and snap[8301].ticks == 340


def test_machine_pct() -> None:
    assert hc.machine_pct(1.4, 20.0, 2) == pytest.approx(3.5)
    assert hc.machine_pct(None, 20.0, 2) is None and hc.machine_pct(1.0, 0.0, 2) is None


def _with_cost(rec: RunRecord, cpu: float = 1.1, backends: float = 0.3, **over: Any) -> RunRecord:
    rec.extra["harness_cost"] = {
        "span_s": 20.0, "cpus": 2, "pgrig_cpu_s": cpu, "pgrig_processes": 1,
        "backends_cpu_s": backends, "backends": 3, "plans": 212, "log_bytes": 419430, **over,
    }  # fmt: skip
    return rec


def test_the_line() -> None:
    cost = view.of(_with_cost(make_record(tps=1000)))
    assert cost.line == "harness: 1.4 CPU-s, 3.5% of the machine; 212 plans, 409.6 KiB log"
    assert "pgrig's processes 1.1 CPU-s, backends of its 3 sessions 0.3 CPU-s" in cost.detail
    doc = cost.as_dict()
    assert doc["recorded"] and doc["cpu_s"] == 1.4 and doc["machine_pct"] == 3.5


def test_pgrigs_wake_ups_are_said_per_second_when_measured() -> None:
    rec = _with_cost(make_record(tps=1000), pgrig_wakeups=540, pgrig_preempted=31)
    cost = view.of(rec)
    assert cost.line == (
        "harness: 1.4 CPU-s, 3.5% of the machine, 27 wake-ups/s; 212 plans, 409.6 KiB log"
    )
    assert "pgrig's threads woke 27.0 times a second and were preempted 1.6 times" in cost.detail
    doc = cost.as_dict()
    assert doc["wakeups_per_s"] == 27.0 and doc["preempted_per_s"] == 1.6
    other = _with_cost(make_record(tps=900), pgrig_wakeups=400, pgrig_preempted=9)
    assert view.of_group([rec, other]).runs == 2
    assert view.of_group([rec, other, rec]).wakeups_per_s == 27.0  # the median
    assert view.of(make_record(tps=1000)).wakeups_per_s is None  # recorded before: not said


def test_the_meter_counts_its_own_threads_switches() -> None:
    """The real getrusage: a thread that sleeps 20 times is 20 voluntary switches or more."""
    import threading
    import time as _time

    from pgrig.load.core import harness_meter

    before = harness_meter._own_switches()

    def naps() -> None:
        for _ in range(20):
            _time.sleep(0.001)

    t = threading.Thread(target=naps)
    t.start()
    t.join()
    after = harness_meter._own_switches()
    assert after[0] - before[0] >= 20


def test_not_recorded_is_never_zero() -> None:
    cost = view.of(make_record(tps=1000))
    assert cost.line == "harness: not recorded"
    assert cost.as_dict() == {"recorded": False, "line": "harness: not recorded"}
    items = dict(run_summary.about(make_record(tps=1000)))
    assert items["harness"] == "not recorded"


def test_what_was_not_measured_is_said() -> None:
    rec = _with_cost(make_record(tps=1000), backends=None, backends_reason="external server")
    rec.extra["harness_cost"].update(plans=None, log_bytes=None, log_reason="no log read")
    cost = view.of(rec)
    assert cost.text == "1.1 CPU-s, 2.8% of the machine; log not measured"
    assert "backends not measured: external server" in cost.detail
    assert "no log read" in cost.detail


def test_load_hosts_agents_count_in_the_cpu_not_in_this_machines_share() -> None:
    rec = _with_cost(make_record(tps=1000), load_hosts={"h1": {"cpu_s": 0.6, "cpus": 4}})
    cost = view.of(rec)
    assert cost.cpu_s == 2.0 and cost.machine_pct == pytest.approx(3.5)
    assert "load hosts' agents 0.6 CPU-s" in cost.detail


def test_each_load_hosts_agent_is_named() -> None:
    hosts = {"h2": {"cpu_s": 0.2, "cpus": 2}, "h3": {"cpu_s": 0.4, "cpus": 2}}
    runs = [
        _with_cost(make_record(tps=1000, seed=i), load_hosts=hosts | {"h3": {"cpu_s": v}})
        for i, v in enumerate((0.4, 0.6, 0.8))
    ]
    cost = view.of(runs[0])
    assert "load hosts' agents 0.6 CPU-s (h2 0.2, h3 0.4)" in cost.detail
    assert cost.as_dict()["load_hosts"] == {"h2": 0.2, "h3": 0.4}
    assert view.of_group(runs).load_hosts == {"h2": 0.2, "h3": 0.6}


def test_difference_beyond_the_threshold() -> None:
    a = view.of(_with_cost(make_record(tps=1000)))  # 3.5%
    near = view.of(_with_cost(make_record(tps=1000), cpu=1.4))  # 4.25%: +0.75 points
    far = view.of(_with_cost(make_record(tps=1000), cpu=2.0))  # 5.75%: +2.25 points
    assert view.difference(a, near) is None
    said = view.difference(a, far)
    assert said is not None and "+2.2 points" in said and f"{view.DIFF_POINTS:g}" in said
    assert view.difference(a, view.of(make_record(tps=1)))  # one side not recorded
    assert view.difference(view.of(make_record(tps=1)), view.of(make_record(tps=2))) is None


def test_a_group_shows_medians() -> None:
    runs = [_with_cost(make_record(tps=1000, seed=i), cpu=c) for i, c in enumerate((1.0, 1.1, 3.0))]
    cost = view.of_group(runs)
    assert cost.pgrig_cpu_s == 1.1 and cost.runs == 3 and "medians of 3 runs" in cost.detail


def _stored(archive: Archive, *recs: RunRecord) -> list[int]:
    for r in recs:
        archive.finish_run(r)
    return [r.id for r in recs if r.id is not None]


def test_every_surface_says_the_same(archive: Archive, url: str, client: TestClient) -> None:
    a = _with_cost(make_record(tps=1000, seed=1))
    b = _with_cost(make_record(tps=1010, seed=2), cpu=2.0)
    old = make_record(tps=990, seed=3)
    ia, ib, iold = _stored(archive, a, b, old)
    line_a = view.of(a).text
    runner = CliRunner()

    shown = runner.invoke(runs_app, ["show", str(ia), "--archive", url])
    assert shown.exit_code == 0 and line_a in " ".join(shown.output.split())

    def show_json(run_id: int) -> dict[str, Any]:
        out = runner.invoke(runs_app, ["show", str(run_id), "--archive", url, "--json"]).output
        return dict(json.loads(out))

    doc = show_json(ia)
    assert doc["harness"]["line"] == f"harness: {line_a}"
    doc = show_json(iold)
    assert doc["harness"] == {"recorded": False, "line": "harness: not recorded"}

    out = runner.invoke(runs_app, ["compare", str(ia), str(ib), "--archive", url, "--json"])
    cmp = json.loads(out.output)
    assert cmp["harness"]["a"]["line"] == f"harness: {line_a}"
    assert "differs by +2.2 points" in cmp["harness"]["differences"]["b"]
    text = " ".join(
        runner.invoke(runs_app, ["compare", str(ia), str(ib), "--archive", url]).output.split()
    )
    # the terminal wraps long cells side by side: the figures are there, word by word
    assert all(word in text for word in ("5.7%", "+2.2", "harness's"))

    page = " ".join(client.get(f"/runs/{ia}").text.split())
    assert line_a.replace("'", "&#39;") in page
    page = " ".join(client.get(f"/compare?ids={ia},{ib}").text.split())
    assert "differs by +2.2 points" in page
    report = " ".join(markdown.render(run_document(archive.get_run(ia)), "r").split())
    assert line_a in report
    report = " ".join(markdown.render(compare_document([[a], [b]]), "c").split())
    assert "differs by +2.2 points" in report
    view_ = compare.build([[a], [b]])
    assert view_.harness is not None and view_.harness.differs


def test_study_show_says_each_points_harness_cost(archive: Archive, url: str) -> None:
    """`study show` (text and --json): per point, the median harness cost of its runs, the same
    line `run` prints; a point whose runs recorded none says "not recorded"."""
    import io

    from rich.console import Console
    from study_fakes import FakeBackend, iterations_toml, study_toml

    from pgrig.cli.study import study_app
    from pgrig.study.runner import run_study
    from pgrig.study.spec import parse

    def decorate(rec: RunRecord, spec: Any) -> None:
        if spec.study_point and spec.study_point.endswith("1"):
            _with_cost(rec, cpu=1.0 + spec.repeat)  # 1.0, 2.0, 3.0: median 2.0
        # the other point's runs were recorded before pgrig measured its cost

    text = study_toml("costs", repeats=3) + iterations_toml(
        {"name": "base"}, {"name": "async", "settings": {"synchronous_commit": "off"}}
    )
    run_study(
        parse(text),
        archive=archive,
        backend=FakeBackend(decorate=decorate),
        console=Console(file=io.StringIO()),
    )
    runs = archive.study_runs("costs")
    archive.add_blobs(runs, ("extra",))
    expected = view.of_group([r for r in runs if r.study_point and r.study_point.endswith("1")])
    assert expected.pgrig_cpu_s == 2.0 and expected.runs == 3
    runner = CliRunner()
    out = runner.invoke(study_app, ["show", "costs", "--archive", url, "--json"])
    assert out.exit_code == 0, out.output
    points = json.loads(out.output)["points"]
    assert [p["harness"]["line"] for p in points] == ["harness: not recorded", expected.line]
    shown = runner.invoke(study_app, ["show", "costs", "--archive", url])
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.split())
    assert f"async {expected.text}" in flat and "base not recorded" in flat
