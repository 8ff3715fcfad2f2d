"""The hosts of a run as every surface shows them (views/run_hosts.py), and per-host OS charts."""

from __future__ import annotations

from pgrig.archive.records import RunRecord
from pgrig.reports.run_charts import metric_chart_sets
from pgrig.views import run_hosts, run_summary


def record() -> RunRecord:
    rec = RunRecord(env_name="lab", workload="pgbench:select-only", clients=4, threads=2)
    rec.measured_s = 3.0
    rec.series = {
        "os@h2": {"t": [-0.5, 0.5, 1.5, 2.5], "cpu_idle": [50.0, 4.0, 6.0, 2.0],
                  "cpu_iowait": [0.0, 1.0, 0.0, 0.0], "proc_pgbench_cpu": [5, 30, 40, 50]},
        "os@db1": {"t": [0.5, 1.5], "cpu_idle": [60.0, 40.0], "cpu_iowait": [0.0, 0.0]},
    }  # fmt: skip
    rec.extra = {
        "load": {
            "split": [{"host": "h2", "clients": 4, "threads": 2, "rate": None}],
            "hosts": {"h2": {"clock": {"offset_ms": 1.5, "error_ms": 0.2},
                             "launch_delay_ms": 0.1, "generator": {"transactions": 1234}}},
            "start_skew_ms": 0.0,
            "first_tx_skew_ms": None,
        },
        "host_roles": {"h2": ["load"], "db1": ["db"]},
        "network": {"paths": [{"from": "h2", "to": "10.0.0.2:5432", "kind": "network",
                               "rtt_p50_ms": 0.1, "rtt_p99_ms": 0.5}]},
    }  # fmt: skip
    return rec


def test_hosts_table_has_one_row_per_host_with_window_cpu() -> None:
    t = run_hosts.hosts_table(record())
    assert t is not None
    rows = {r[0].text: [c.text for c in r] for r in t.rows}
    assert set(rows) == {"h2", "db1"}
    h2 = rows["h2"]
    assert h2[1] == "load" and h2[4] == "4 / 2" and h2[6] == "network"
    assert h2[3] == "pgbench 40.0"
    assert h2[2] == "95.7"  # (95 + 94 + 98) / 3 over the window; the lead-in row left out
    assert t.rows[0][2].style == "warn"  # above 90%: the client was measured
    assert h2[7] == "0.100 / 0.500" and h2[8].startswith("+1.500")
    assert rows["db1"][1] == "db" and rows["db1"][2] == "50.0"


def test_summary_and_charts_name_each_host() -> None:
    v = run_summary.build(record())
    about = dict(v.about)
    assert about["load from"] == "h2 (4 clients, 2 threads)"
    assert "h2 -> 10.0.0.2:5432 (network)" in about["network"]
    assert v.hosts is not None
    titles = [s.title for s in metric_chart_sets(record().series)]
    assert "OS, host h2" in " ".join(titles) or any("host h2" in x for x in titles)
