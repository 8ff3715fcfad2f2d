"""`pgrig runs list/show/compare/export` over a small SQLite archive."""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pgrig.archive.records import LatencyStats, RunRecord, ScriptResult, StudyRecord
from pgrig.archive.store import Archive
from pgrig.cli.runs import app
from pgrig.errors import PgrigError

runner = CliRunner()


def _rec(**kw: object) -> RunRecord:
    rec = RunRecord(
        env_name="pg15",
        workload="pgbench:tpcb-like",
        clients=10,
        threads=2,
        status="ok",
        server_major=15,
        server_version="15.14",
        duration_s=10.0,
        measured_s=10.0,
        tps=1000.0,
        transactions=10000,
        failed=0,
        retried=0,
        skipped=0,
        latency=LatencyStats(avg=10.0, p50=9.0, p95=20.0, p99=30.0, max=80.0),
        scripts=[ScriptResult(0, "pgbench:tpcb-like", transactions=10000, tps=1000.0)],
        settings={
            "shared_buffers": {
                "setting": "16384",
                "boot_val": "1024",
                "unit": "8kB",
                "source": "configuration file",
            },
            "work_mem": {"setting": "4096", "boot_val": "4096", "source": "default"},
        },
        host={"hostname": "bench1", "cpu_logical": 2},
        command="pgbench -c 10 -j 2 -T 10 -b tpcb-like pgrig",
        series={"pgbench": {"t": list(range(10)), "tps": [1000.0 + (i % 3) for i in range(10)]}},
        tags={"purpose": "demo"},
    )
    for k, v in kw.items():
        setattr(rec, k, v)
    return rec


@pytest.fixture
def url(pgrig_home: Path) -> str:
    url = f"sqlite:///{pgrig_home / 'cli.sqlite'}"
    with Archive(url) as a:
        a.create_study(StudyRecord(name="sweep1", kind="sweep", spec=""))
        a.finish_run(_rec())
        a.finish_run(
            _rec(
                tps=1500.0,
                latency=LatencyStats(avg=7.0, p95=14.0),
                series={"pgbench": {"t": list(range(10)), "tps": [1500.0 + i for i in range(10)]}},
                settings={
                    "shared_buffers": {
                        "setting": "65536",
                        "boot_val": "1024",
                        "unit": "8kB",
                        "source": "configuration file",
                    },
                    "work_mem": {"setting": "4096", "boot_val": "4096", "source": "default"},
                },
                study="sweep1",
                study_point="c=10",
                note="bigger buffers",
            )
        )
        a.finish_run(_rec(status="failed", error="pgbench: could not connect", tps=None))
    return url


def _run(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def test_list_human_and_json(url: str) -> None:
    out = _run("list", "--archive", url)
    assert "pgbench:tpcb-like" in out and "failed" in out and "1,500" in out
    doc = json.loads(_run("list", "--archive", url, "--json"))
    assert [r["id"] for r in doc] == [3, 2, 1]
    assert doc[0]["status"] == "failed" and doc[0]["error"] == "pgbench: could not connect"
    assert doc[1]["latency_ms"]["p95"] == 14.0 and doc[1]["study"] == "sweep1"


@pytest.mark.parametrize(
    ("args", "ids"),
    [
        (["--status", "failed"], [3]),
        (["--study", "sweep1"], [2]),
        (["--env", "other"], []),
        (["--pg", "15", "--limit", "1"], [3]),
        (["--tag", "purpose=demo", "--workload", "pgbench:tpcb-like"], [3, 2, 1]),
        (["--text", "bigger"], [2]),
    ],
)
def test_list_filters(url: str, args: list[str], ids: list[int]) -> None:
    doc = json.loads(_run("list", "--archive", url, "--json", *args))
    assert [r["id"] for r in doc] == ids


def test_list_uses_pgrig_archive(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGRIG_ARCHIVE", url)
    assert len(json.loads(_run("list", "--json"))) == 3


def test_bad_tag_is_a_clear_error(url: str) -> None:
    result = runner.invoke(app, ["list", "--archive", url, "--tag", "novalue"])
    assert isinstance(result.exception, PgrigError)
    assert "expected key=value" in str(result.exception)


def test_show(url: str) -> None:
    out = _run("show", "2", "--archive", url)
    assert "shared_buffers" in out and "work_mem" not in out  # only non-defaults
    assert "512 MiB" in out and "8 MiB" in out and "65536" not in out  # human units
    assert "bench1" in out and "pgbench -c 10" in out and "sweep1" in out
    doc = json.loads(_run("show", "2", "--archive", url, "--json"))
    assert doc["id"] == 2 and doc["tps"] == 1500.0
    assert list(doc["non_default_settings"]) == ["shared_buffers"]
    assert doc["scripts"][0]["transactions"] == 10000 and doc["host"]["hostname"] == "bench1"
    failed = json.loads(_run("show", "3", "--archive", url, "--json"))
    assert failed["status"] == "failed" and failed["error"] == "pgbench: could not connect"


def test_compare(url: str) -> None:
    out = _run("compare", "1", "2", "--archive", url)
    assert "x1.500" in out and "x0.700" in out and "shared_buffers" in out
    assert "128 MiB" in out and "512 MiB" in out and "16384" not in out  # human units
    doc = json.loads(_run("compare", "1", "2", "--archive", url, "--json"))
    assert doc["a"] == {"runs": [{"id": 1, "status": "ok"}]}
    assert doc["metrics"]["tps"] == {"a": 1000.0, "b": 1500.0, "ratio": 1.5}
    assert doc["metrics"]["latency_ms.avg"]["ratio"] == pytest.approx(0.7)
    assert doc["settings_diff"] == {"shared_buffers": {"a": "16384", "b": "65536"}}
    # single 10 s runs: too short for even an indicative verdict, and it says why
    v = doc["verdict"]
    assert v["verdict"] is None and v["ratio"] == 1.5 and v["text"] == "x1.500"
    assert v["reason"] == "single runs under 30 s (run 1: 10 s)"
    assert "verdict on TPS: x1.500 no verdict: single runs under 30 s (run 1: 10 s)" in out
    assert doc["comparisons"]["latency.p95"]["verdict"] is None


def test_compare_refuses_a_verdict_for_a_failed_run(url: str) -> None:
    doc = json.loads(_run("compare", "1", "3", "--archive", url, "--json"))
    assert doc["b"] == {"runs": [{"id": 3, "status": "failed"}]}
    assert doc["verdict"]["verdict"] is None and doc["verdict"]["reason"] == "run 3 is failed"
    out = _run("compare", "1", "3", "--archive", url)
    assert "no verdict: run 3 is failed; only ok runs are compared" in out


def test_compare_groups_of_repeats(url: str) -> None:
    base, cand = [1000.0, 1010.0, 990.0, 1005.0], [1100.0, 1120.0, 1095.0, 1110.0]
    with Archive(url) as a:
        for v in base + cand:
            a.finish_run(_rec(tps=v))
    doc = json.loads(_run("compare", "4-7", "8,9,10,11", "--archive", url, "--json"))
    assert [r["id"] for r in doc["b"]["runs"]] == [8, 9, 10, 11]
    v = doc["verdict"]
    assert v["method"] == "repeats" and (v["n_baseline"], v["n_candidate"]) == (4, 4)
    ratios = sorted(c / b for c in cand for b in base)  # independently: the 16 pairwise ratios
    assert v["ratio"] == pytest.approx(statistics.median(ratios))
    # 4 vs 4 at 95%: U's lower tail P(U <= 0) = 1/70 <= 0.025 < P(U <= 1) = 2/70: k = 1
    assert (v["lower"], v["upper"]) == (pytest.approx(ratios[0]), pytest.approx(ratios[-1]))
    assert v["verdict"] == "faster" and v["text"] == v["description"].split(" faster")[0]
    walsh = [(x + y) / 2 for i, x in enumerate(base) for y in base[i:]]
    assert doc["metrics"]["tps"]["a"] == pytest.approx(statistics.median(walsh))  # 1001.25
    out = _run("compare", "4-7", "8,9,10,11", "--archive", url)
    assert f"verdict on TPS: {v['description']}" in " ".join(out.split())
    assert "A: runs 4,5,6,7 (4/4 ok)" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["1,2", "2,3"], "run 2 is listed twice"),
        (["1", "x"], "bad run list 'x'"),
        (["1", "2", "--threshold", "2"], "--threshold 2 must be in [0, 1)"),
        (["1", "2", "--misrate", "0"], "--misrate 0 must be between 0 and 1"),
    ],
)
def test_compare_bad_input(url: str, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["compare", *args, "--archive", url])
    assert isinstance(result.exception, PgrigError) and message in str(result.exception)


def test_list_shows_nopm_in_its_own_column(url: str) -> None:
    with Archive(url) as a:
        a.finish_run(_rec(workload="tpcc", scenario="tpcc", tps=812.5, nopm=21_000.0))
    out = _run("list", "--archive", url)
    header, row = out.splitlines()[0].split(), out.splitlines()[1]
    assert header[:4] == ["id", "status", "tps", "nopm"]
    assert "812.5" in row and "21,000" in row


def test_cli_defaults_are_the_engines() -> None:
    from pgrig.analysis import compare
    from pgrig.cli import common

    assert (common.THRESHOLD, common.MISRATE) == (
        compare.DEFAULT_THRESHOLD,
        compare.DEFAULT_MISRATE,
    )


def test_export(url: str, tmp_path: Path) -> None:
    doc = json.loads(_run("export", "1", "--archive", url))
    assert doc["series"]["pgbench"]["tps"][0] == 1000.0
    rows = list(csv.reader(io.StringIO(_run("export", "1", "--format", "csv", "--archive", url))))
    assert rows[0] == ["run_id", "t", "pgbench.tps"] and len(rows) == 11
    out = tmp_path / "run1.csv"
    result = runner.invoke(app, ["export", "1", "-f", "csv", "-o", str(out), "--archive", url])
    assert result.exit_code == 0 and result.stdout == ""
    assert out.read_text().startswith("run_id,t,pgbench.tps\n")
    bad = runner.invoke(app, ["export", "1", "--format", "xml", "--archive", url])
    assert isinstance(bad.exception, PgrigError)


def test_cli_errors_are_one_line(url: str) -> None:
    env = {**os.environ, "PGRIG_ARCHIVE": url}
    cmd = [sys.executable, "-c", "from pgrig.cli.app import main; main()", "runs", "show", "99"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip() == f"error: run 99 is not in archive {url}"


def test_compare_points_to_the_repeats_of_study_points(url: str) -> None:
    with Archive(url) as a:
        a.create_study(StudyRecord(name="s", kind="iterations", spec=""))
        for point, tps in (("iter-00", 1000.0), ("iter-01", 1100.0)):
            for repeat in range(3):
                a.finish_run(_rec(tps=tps + repeat, study="s", study_point=point, repeat=repeat))
    doc = json.loads(_run("compare", "4", "7", "--archive", url, "--json"))
    assert doc["study_repeats"] == [[4, 5, 6], [7, 8, 9]]
    result = runner.invoke(app, ["compare", "4", "7", "--archive", url])
    assert "`pgrig runs compare 4,5,6 7,8,9` compares all of them" in result.output
    assert (
        json.loads(_run("compare", "1", "2", "--archive", url, "--json"))["study_repeats"] is None
    )
