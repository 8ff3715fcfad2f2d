"""JSON and CSV exports of a run."""

from __future__ import annotations

import csv
import io
import json

import pytest

from pgrig.archive.export import export_run, run_to_json, series_table
from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult
from pgrig.errors import PgrigError


def record() -> RunRecord:
    return RunRecord(
        env_name="e",
        workload="pgbench:tpcb-like",
        clients=4,
        threads=2,
        id=7,
        status="ok",
        tps=100.5,
        transactions=6030,
        failed=0,
        latency=LatencyStats(avg=1.5, p95=float("nan")),
        scripts=[ScriptResult(0, "tpcb", tps=100.5, latency=LatencyStats(p99=3.0))],
        settings={
            "work_mem": {"setting": "8192", "boot_val": "4096", "source": "configuration file"}
        },
        series={
            "os": {"t": [-0.98, 0.02, 1.01, 2.0], "cpu_user": [1.0, 2.0, 3.0, 4.0]},
            "pgbench": {"t": [-1, 0, 1], "tps": [90.0, 100.0, None], "p95": [1, 2, 3]},
            "pg": {"t": [1], "commits": [55]},
        },
    )


def test_run_to_json_has_the_summary_with_stable_keys() -> None:
    doc = run_to_json(record())
    assert doc["id"] == 7 and doc["status"] == "ok" and doc["error"] is None
    assert doc["tps"] == 100.5 and doc["transactions"] == 6030 and doc["failed"] == 0
    assert doc["latency_ms"]["avg"] == 1.5
    assert doc["latency_ms"]["p95"] is None  # NaN is not JSON
    assert doc["scripts"][0]["latency_ms"]["p99"] == 3.0
    assert "nopm" not in doc and "tpm" not in doc
    assert "series" not in doc and "settings" not in doc
    json.dumps(doc, allow_nan=False)
    tpcc = record()
    tpcc.nopm, tpcc.tpm = 1000.0, 2222.0
    assert run_to_json(tpcc)["nopm"] == 1000.0 and run_to_json(tpcc)["tpm"] == 2222.0


def test_json_export_holds_everything() -> None:
    doc = json.loads(export_run(record(), "json"))
    assert doc["series"]["pgbench"]["tps"] == [90.0, 100.0, None]
    assert doc["non_default_settings"] == {"work_mem": record().settings["work_mem"]}
    assert set(doc) >= {"settings", "settings_layers", "host", "artifacts", "extra", "scripts"}


def test_csv_is_one_table_joined_on_the_second() -> None:
    rows = list(csv.reader(io.StringIO(export_run(record(), "csv"))))
    assert rows[0] == ["run_id", "t", "pgbench.tps", "pgbench.p95", "os.cpu_user", "pg.commits"]
    assert rows[1:] == [
        ["7", "-1", "90.0", "1", "1.0", ""],
        ["7", "0", "100.0", "2", "2.0", ""],
        ["7", "1", "", "3", "3.0", "55"],
    ]


def test_csv_without_pgbench_series_uses_all_seconds() -> None:
    rec = record()
    del rec.series["pgbench"]
    header, rows = series_table(rec)
    assert header == ["run_id", "t", "os.cpu_user", "pg.commits"]
    assert [r[1] for r in rows] == [-1, 0, 1, 2]
    assert rows[2] == [7, 1, 3.0, 55]


def test_csv_of_a_run_without_series_is_just_a_header() -> None:
    rec = record()
    rec.series = {}
    assert export_run(rec, "csv") == "run_id,t\n"


def test_unknown_format_is_refused() -> None:
    with pytest.raises(PgrigError, match="unknown export format 'xml'"):
        export_run(record(), "xml")  # type: ignore[arg-type]


def test_session_level_values_are_not_server_settings() -> None:
    from pgrig.archive.records import RunRecord

    rec = RunRecord(env_name="e", workload="w", clients=1, threads=1)
    rec.settings = {
        "work_mem": {"setting": "8192", "boot_val": "4096", "source": "configuration file"},
        "application_name": {"setting": "pgrig", "boot_val": "", "source": "client"},
        "search_path": {"setting": "x", "boot_val": "y", "source": "session"},
        "shared_buffers": {"setting": "16384", "boot_val": "16384", "source": "configuration file"},
    }
    assert set(rec.non_default_settings()) == {"work_mem"}
