"""CH-benCHmark's mixed run: the request's rules, the analytic figures from the streams' events
and the run's window, the streams' order, what every surface says."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load.engines.chbench_driver import ChbenchDriver
from pgrig.record.figures import headline
from pgrig.request import RunRequest, from_flags
from pgrig.views import chbench as chbench_view
from pgrig.views import run_summary
from pgrig.workloads import scenario, specs
from pgrig.workloads.chbench import metrics, stream


def _req(**kw: Any) -> RunRequest:
    return from_flags(RunRequest, env_name="e", **{"workload": "chbench", "duration_s": 10.0, **kw})


def test_a_chbench_run_needs_its_analytic_clients_and_takes_tpcc_options() -> None:
    req = _req(analytic_clients=2, query_timeout_s=30.0, tpcc_mix="45,43,4,4,4", clients=4)
    assert req.is_chbench and req.is_tpcc and req.analytic_clients == 2
    assert _req(analytic_clients=0).analytic_clients == 0  # TPC-C alone on the CH data
    assert specs.parse_workloads(["chbench"]) == [] and specs.scenario_of([], ["chbench"]) == (
        "chbench"
    )


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({}, "--analytic-clients is required with --workload chbench"),
        ({"analytic_clients": -1}, "--analytic-clients"),
        (
            {"analytic_clients": 1, "workload": "tpcc"},
            "--analytic-clients applies only to --workload chbench",
        ),
        (
            {"analytic_clients": 1, "workload": "tpch:power", "duration_s": None},
            "--analytic-clients applies only to --workload chbench",
        ),
        ({"analytic_clients": 0, "query_timeout_s": 5.0}, "--query-timeout bounds the analytic"),
        (
            {"analytic_clients": 1, "duration_s": None, "transactions_per_client": 10},
            "--transactions does not apply to --workload chbench",
        ),
        ({"analytic_clients": 1, "load_from": ["h1"]}, "--load-from does not apply"),
        (
            {"analytic_clients": 1, "txlog": "off"},
            "--txlog off is not available with --workload chbench",
        ),
    ],
)
def test_bad_chbench_requests_are_refused_naming_the_flag(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(PgrigError, match=message):
        _req(**given)


def test_the_query_timeout_still_refused_on_other_workloads() -> None:
    with pytest.raises(PgrigError, match="--query-timeout applies only to"):
        from_flags(RunRequest, env_name="e", workload="tpcc", duration_s=5.0, query_timeout_s=3.0)


def test_chbench_data_is_required_tpcc_data_is_not_enough(tmp_path: Path) -> None:
    env: Any = SimpleNamespace(name="lab")  # the refusal reads its name only
    spec = _req(analytic_clients=1)
    with pytest.raises(PgrigError) as found:
        scenario.of("chbench", []).run_scripts(
            spec, env, "ch", tmp_path, {"scenario": "tpcc", "warehouses": 2}
        )
    said = str(found.value)
    assert "holds no CH-benCHmark data (it holds tpcc)" in said
    # the warehouses the database holds, not a placeholder (issue 43)
    assert "pgrig db generate lab --db ch --scenario chbench --warehouses 2` first" in said


def test_each_stream_cycles_through_the_22_queries_from_its_own_start() -> None:
    assert stream.order(1, 1) == list(range(1, 23))
    orders = [stream.order(s, 2) for s in (1, 2)]
    assert orders[1][0] == 12 and all(sorted(o) == list(range(1, 23)) for o in orders)


def _q(query: int, status: str, started: float, ended: float, **kw: Any) -> dict[str, Any]:
    return {
        "event": "query", "stream": kw.pop("stream", 1), "query": query, "status": status,
        "seconds": round(ended - started, 6), "started_at": started, "ended_at": ended, **kw,
    }  # fmt: skip


# A window [1000, 1010): the streams' events around it
EVENTS = [
    {"event": "ready", "at": 997.5},
    {"event": "start", "streams": 2, "until": 1010.0, "order": {"1": [1], "2": [12]}, "at": 998},
    _q(1, "ok", 998.0, 999.5),  # the warm-up: recorded, not counted
    _q(2, "ok", 999.5, 1001.0),  # began in the warm-up, completed inside: counted
    _q(3, "ok", 1001.0, 1002.0),
    _q(3, "ok", 1002.0, 1005.0, stream=2),
    _q(4, "timeout", 1005.0, 1007.0),  # --query-timeout: recorded, not counted
    _q(3, "ok", 1005.0, 1009.5, stream=2),
    _q(5, "cut", 1007.0, 1010.02),  # running at the window's end: cancelled, not counted
    _q(6, "cut", 1009.5, 1010.03, stream=2),
    {"event": "end", "at": 1010.05},
]


def test_queries_per_hour_counts_what_completed_inside_the_window() -> None:
    doc = metrics.summarize(EVENTS, 2, (1000.0, 1010.0), 2.0)
    assert doc["completed"] == 4 and doc["qph"] == 4 * 3600 / 10
    assert doc["cut"] == 2 and doc["timed_out"] == 1 and doc["before_window"] == 1
    assert [r["in_window"] for r in doc["queries"]] == [False, True, True, True, True, True,
                                                        False, False]  # fmt: skip
    q3 = doc["per_query"]["Q3"]
    assert q3["completed"] == 3 and q3["median_s"] == 3.0 and q3["max_s"] == 4.5
    assert doc["per_query"]["Q4"] == {"completed": 0, "median_s": None, "max_s": None,
                                      "timed_out": 1, "errors": 0, "cut": 0}  # fmt: skip
    assert doc["per_query"]["Q5"]["cut"] == 1 and "Q1" not in doc["per_query"]
    assert doc["order"] == {"1": [1], "2": [12]}
    assert doc["ready_at"] == 997.5 and doc["started_at"] == 998 and doc["started_s"] == -2.0


def test_no_analytic_stream_means_no_rate_not_a_rate_of_zero() -> None:
    doc = metrics.summarize([], 0, (1000.0, 1010.0), None)
    assert doc["qph"] is None and doc["completed"] is None and doc["queries"] == []
    assert metrics.summarize(EVENTS, 2, None, None)["qph"] is None  # nothing measured


class _FakeTpcc:
    """What ChbenchDriver needs of TPC-C's PgbenchDriver: its fill sets the window and NOPM."""

    progress_on = "stderr"
    lead_in_s = 1
    total_s = 11
    txlog_mode = "full"

    def fill(self, rec: RunRecord, *args: Any) -> None:
        rec.measured_s = 10.0
        rec.extra["window"] = {"start_us": 1_000_000_000, "end_us": 1_010_000_000}
        rec.nopm, rec.tpm = 1200.0, 2700.0

    def cross_check(self, rec: RunRecord, *args: Any) -> str | None:
        return None


def _driver(tmp_path: Path, events: list[dict[str, Any]], **kw: Any) -> ChbenchDriver:
    spec = _req(analytic_clients=2, query_timeout_s=2.0, **kw)
    driver = ChbenchDriver(spec, _FakeTpcc(), {}, [], tmp_path)  # type: ignore[arg-type]
    lines = [json.dumps(e) for e in events]
    driver.lines = [*lines, '{"event": "query", "str']  # a torn last line
    driver.rc = 0
    return driver


def _record() -> RunRecord:
    return RunRecord(env_name="e", workload="chbench", clients=2, threads=1, id=7,
                     scenario="chbench", status="ok")  # fmt: skip


def test_the_driver_records_tpcc_and_the_analytic_side_together(tmp_path: Path) -> None:
    rec = _record()
    driver = _driver(tmp_path, EVENTS)
    driver.fill(rec, True, "", "", {})
    doc = rec.extra["chbench"]
    assert rec.nopm == 1200.0 and doc["qph"] == 1440.0 and doc["completed"] == 4
    assert doc["analytic_clients"] == 2 and doc["query_timeout_s"] == 2.0
    assert len(doc["queries"]) == 8  # every query reported, the torn last line left out
    assert {w["code"] for w in rec.warnings()} == {"chbench_timeout"}
    assert driver.cross_check(rec, "", "") is None
    assert driver.stream_command()[-4:] == ["--streams", "2", "--query-timeout", "2"]


def test_a_failed_analytic_query_fails_the_run_naming_it(tmp_path: Path) -> None:
    rec = _record()
    failed = _q(7, "error", 1003.0, 1003.1, error='relation "nation" does not exist')
    driver = _driver(tmp_path, [*EVENTS[:3], failed])
    driver.fill(rec, True, "", "", {})
    said = driver.cross_check(rec, "", "")
    assert said == 'the analytic streams failed: Q7: relation "nation" does not exist'


def test_every_surface_says_the_same_analytic_figures(tmp_path: Path) -> None:
    rec = _record()
    _driver(tmp_path, EVENTS).fill(rec, True, "", "", {})
    line = chbench_view.line(rec)
    assert line == (
        "analytic queries per hour 1,440: 4 completed in the 10s window by 2 streams; "
        "not counted: 2 cut at the window's end, 1 timed out"
    )
    summary = run_summary.build(rec)
    assert ("analytic", line) in summary.results
    assert summary.analytic is not None and summary.analytic.rows[0][0].text == "Q2"
    assert [c.text for c in summary.analytic.rows[1]] == ["Q3", "3", "3,000", "4,500", "0",
                                                          "0", "0"]  # fmt: skip
    doc = run_summary.to_json(rec)
    assert doc["chbench"]["qph"] == 1440.0 and doc["summary"]["results"]["analytic"] == line
    assert headline(rec).key == "nopm"
    about = dict(run_summary.about(rec))
    assert "2 clients, 1 threads, 2 analytic streams" in about["load"]


def test_tpcc_alone_on_the_ch_data_says_so() -> None:
    rec = _record()
    rec.extra["chbench"] = metrics.summarize([], 0, (1000.0, 1010.0), None)
    assert chbench_view.line(rec) == (
        "no analytic stream (--analytic-clients 0): TPC-C alone on CH-benCHmark's data"
    )
    assert chbench_view.table(rec) is None
    assert chbench_view.analytic_clients(rec) == 0


@pytest.mark.parametrize("workload", ["chbench", "tpch:power"])
def test_emit_k8s_refuses_workloads_whose_streams_the_manifests_cannot_carry(
    workload: str, tmp_path: Path
) -> None:
    from pgrig.load.emit import k8s_emit

    spec = _req(analytic_clients=1) if workload == "chbench" else _req(workload=workload,
                                                                       duration_s=None)  # fmt: skip
    with pytest.raises(PgrigError, match=f"--emit k8s: workload {workload} runs pgrig's own"):
        k8s_emit.emit(spec, tmp_path)
    assert not any(tmp_path.iterdir())


def test_streams_that_began_inside_the_window_are_said_to_read_low(tmp_path: Path) -> None:
    rec = _record()
    late = [{**e, "at": 1001.5} if e.get("event") == "start" else e for e in EVENTS]
    _driver(tmp_path, late).fill(rec, True, "", "", {})
    assert rec.extra["chbench"]["started_s"] == 1.5
    said = {w["code"]: w["message"] for w in rec.warnings()}
    assert said["chbench_late_streams"].startswith(
        "the analytic streams started 1.5 s into the measured window"
    )
