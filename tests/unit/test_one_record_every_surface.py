"""Issue 30, class 8: one record, every surface. The hosts of a run with load hosts (split,
start skew, network, the hosts table), where its server was (managed here, managed on another
host, external), what its percentiles rest on and its latency line are computed once in views/
and said the same by `runs show` (text and --json), `run` and the run page.

The records are captured real runs (tests/fixtures/runs/*.json, README.md there says how each
was made): pgbench_two_load_hosts is a run from two namespaced hosts of the rig
(tests/integration/test_load_hosts_rig.py), pgbench_load_from one with --load-from localhost,
pgbench_txlog_off one with --txlog off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pgrig.archive.records import LatencyStats, RunRecord
from pgrig.views import disk_limit, latency, run_environment, run_hosts, run_summary

RUNS = Path(__file__).parents[1] / "fixtures" / "runs"


def captured(name: str, **fields: Any) -> RunRecord:
    doc = json.loads((RUNS / f"{name}.json").read_text())
    rec = RunRecord(env_name="cap", workload=doc["workload"], clients=4, threads=2, **fields)
    rec.id, rec.status, rec.via = 7, doc["status"], doc["via"]
    rec.extra, rec.host = doc["extra"], doc.get("host") or {}
    return rec


@pytest.mark.parametrize("name", ["pgbench_two_load_hosts", "pgbench_load_from"])
def test_runs_show_json_holds_what_the_text_shows_of_the_load_hosts(name: str) -> None:
    rec = captured(name, managed=False, target="postgresql://postgres@10.232.1.1:14900/")
    load = rec.extra["load"]
    doc = run_summary.to_json(rec)
    assert doc["load_from"] == [
        {"host": s["host"], "clients": s["clients"], "threads": s["threads"], "rate": s["rate"]}
        for s in load["split"]
    ]
    assert doc["start_skew_ms"] == load["start_skew_ms"]
    assert doc["first_tx_skew_ms"] == load["first_tx_skew_ms"]
    assert doc["network_paths"] == rec.extra["network"]["paths"]
    rows = {h["host"]: h for h in doc["hosts"]}
    for path in rec.extra["network"]["paths"]:
        host = path["from"]
        assert rows[host]["rtt_p50_ms"] == path["rtt_p50_ms"]
        assert rows[host]["transactions"] == load["hosts"][host]["generator"]["transactions"]
        assert rows[host]["clock_offset_ms"] == load["hosts"][host]["clock"]["offset_ms"]
    # the text of `runs show` is made of the same view: its lines are the JSON's summary
    v = run_summary.build(rec)
    about = dict(v.about)
    assert doc["summary"]["about"] == about
    assert about["load from"] == ", ".join(
        f"{s['host']} ({s['clients']} clients, {s['threads']} threads)" for s in load["split"]
    )
    assert about["start skew"].startswith(f"{load['start_skew_ms']:.3f} ms between launches")
    assert v.hosts is not None
    table_rows = {r[0].text: [c.text for c in r] for r in v.hosts.rows}
    for host, row in rows.items():
        assert table_rows[host][4] == f"{row['clients']} / {row['threads']}"
        assert table_rows[host][7] == f"{row['rtt_p50_ms']:.3f} / {row['rtt_p99_ms']:.3f}"
    json.dumps(doc, allow_nan=False)  # valid JSON


def test_the_two_host_capture_is_two_load_hosts_on_the_network() -> None:
    rec = captured("pgbench_two_load_hosts")
    view = run_hosts.of(rec)
    assert [s.host for s in view.load_from] == ["h2", "h3"]
    assert {r.host: r.path for r in view.rows if r.host in ("h2", "h3")} == {
        "h2": "network", "h3": "network"
    }  # fmt: skip
    assert all(r.cpu_busy_pct is None for r in view.rows)  # no series kept in the fixture


def test_a_remote_environment_pgrig_made_is_managed_on_its_host() -> None:
    rec = captured("pgbench_load_from", managed=True, target="postgresql://postgres@10.0.0.1:5432/")
    rec.extra["server_on"] = "db1"
    where = run_environment.of(rec)
    assert (where.kind, where.managed, where.here, where.on) == ("remote", True, False, "db1")
    assert dict(run_summary.about(rec))["environment"] == "cap (managed on db1, via direct)"
    doc = run_summary.to_json(rec)
    assert doc["managed"] is True and doc["environment"]["on"] == "db1"
    # its disk is db1's: not "not recorded" as if this machine's had been forgotten
    assert disk_limit.items(rec) == []


def test_an_older_run_on_another_host_is_known_by_its_db_host() -> None:
    rec = captured("pgbench_load_from", managed=False, target="postgresql://postgres@x:1/")
    rec.extra["host_roles"] = {"db1": ["db"], "c1": ["load"]}  # recorded before server_on
    assert run_environment.of(rec).text("direct") == "cap (managed on db1, via direct)"
    assert run_summary.to_json(rec)["managed"] is True


def test_an_external_server_is_said_external() -> None:
    rec = captured("pgbench_load_from", managed=False, target="postgresql://bench@h:5432/app")
    where = run_environment.of(rec)
    assert where.kind == "external" and not where.managed
    assert where.text("direct") == "cap (external postgresql://bench@h:5432/app, via direct)"
    assert run_summary.to_json(rec)["managed"] is False


def test_the_percentiles_of_merged_logs_rest_on_every_transaction() -> None:
    rec = captured("pgbench_two_load_hosts")
    rec.latency = LatencyStats(p50=0.2, p95=0.5, p99=0.9)
    basis = latency.of(rec)
    assert basis is not None and basis.rests_on != latency.NOT_RECORDED
    assert basis.samples == basis.population
    doc = run_summary.to_json(rec)
    assert doc["latency_basis"]["samples"] == basis.samples
    assert "merged" in doc["summary"]["results"]["percentiles rest on"]


def test_run_prints_the_latency_runs_show_prints_with_txlog_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pgrig.cli.run import _print_human

    rec = captured("pgbench_txlog_off")
    summary = rec.extra["pgbench_summary"]
    rec.tps, rec.measured_s, rec.transactions = summary["tps"], 3.0, summary["processed"]
    rec.latency = LatencyStats(avg=summary["latency_avg_ms"], stddev=summary["latency_stddev_ms"])
    shown = dict(run_summary.results(rec))["latency ms"]
    assert shown == "avg 0.24, stddev 0.48"
    _print_human(rec)
    out = capsys.readouterr().out
    assert f"latency ms {shown}" in out
