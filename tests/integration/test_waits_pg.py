"""Wait profiles against a real PostgreSQL 15: 10 Hz sampling of pg_stat_activity for short
runs, pg_wait_sampling's profile where it is loaded, bounds and sample counts beside every
share on every surface; `env set --json`; an interrupted --txlog off|sampled run keeps the
figures of its progress lines."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrig import format
from pgrig.archive.records import RunRecord
from pgrig.archive.store import Archive
from tests.integration import servers
from tests.integration.servers import ok_run, pgbench_lab, pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with pgbench_lab("pgrig-waits-") as name:
        yield name


def _run(lab: str, *flags: str) -> RunRecord:
    return ok_run(lab, "--workload", "pgbench:tpcb", "-c", "4", "-T", "3", *flags)


def _check_bounds(doc: dict) -> None:
    assert doc["collected"] and doc["events"], doc
    for e in doc["events"]:
        assert 0 <= e["low_pct"] <= e["share_pct"] <= e["high_pct"] <= 100
        assert 0 < e["effective_n"] <= doc["active_seen"]


def test_a_short_run_samples_waits_ten_times_a_second(lab: str) -> None:
    rec = _run(lab)
    chosen = rec.extra["wait_sampling"]
    assert chosen["hz"] == 10 and chosen["pg_wait_sampling"]["used"] is False
    assert "installed but not loaded" in chosen["pg_wait_sampling"]["reason"]
    stats = chosen["sampler"]
    assert stats["snapshots"] >= 25 and stats["error"] is None
    waits = rec.insights["waits"]
    assert waits["source"] == "pg_stat_activity, sampled 10 times a second"
    _check_bounds(waits)
    # independently, from the archived series: rows of the measured window, summed
    series = rec.series["waits"]
    picked = [i for i, t in enumerate(series["t"]) if 0 < t <= rec.measured_s + 0.5]
    assert 20 <= waits["samples"] == sum(series["snapshots"][i] for i in picked) <= 45
    seen = {k[5:]: sum(series[k][i] or 0 for i in picked) for k in series if k.startswith("wait.")}
    assert waits["active_seen"] == sum(seen.values())
    for e in waits["events"]:
        assert e["seen"] == seen[e["event"]]
        assert e["share_pct"] == pytest.approx(
            100 * seen[e["event"]] / waits["active_seen"], abs=0.01
        )
    shown = " ".join(pgrig("runs", "show", str(rec.id)).stdout.split())
    top = waits["events"][0]
    assert (
        f"{top['event']} {format.share(top['share_pct'], top['low_pct'], top['high_pct'])}" in shown
    )
    assert f"of {waits['active_seen']:,} samples" in shown
    assert "pg_wait_sampling is installed but not loaded" in shown


def test_waits_hz_1_is_the_once_a_second_sampler(lab: str) -> None:
    rec = _run(lab, "--waits-hz", "1")
    assert "waits" not in rec.series and rec.extra["wait_sampling"]["hz"] == 1
    assert rec.insights["waits"]["source"] == "pg_stat_activity, sampled once a second"
    _check_bounds(rec.insights["waits"])
    bad = pgrig("run", lab, "--workload", "pgbench:tpcb", "-T", "1", "--waits-hz", "500",
                check=False)  # fmt: skip
    assert bad.returncode != 0 and "--waits-hz" in bad.stderr


def test_env_set_json_then_pg_wait_sampling_profile(lab: str) -> None:
    doc = json.loads(pgrig("env", "set", lab, "work_mem=8MB", "--json").stdout)
    assert doc["action"] == "reload"
    expected = {"name": "work_mem", "before": "4MB", "after": "8MB", "layer": "environment"}
    assert doc["changed"] == [{**expected, "overridden_by_auto_conf": None}]
    doc = json.loads(
        pgrig("env", "set", lab, "shared_preload_libraries=pg_wait_sampling", "--json").stdout
    )
    assert doc["action"] == "restart"
    (change,) = doc["changed"]
    assert "pg_wait_sampling" not in change["before"] and "pg_wait_sampling" in change["after"]
    again = json.loads(pgrig("env", "set", lab, "work_mem=8MB", "--json").stdout)
    assert again == {"env": lab, "action": "unchanged", "changed": []}

    rec = _run(lab)
    found = rec.extra["wait_sampling"]["pg_wait_sampling"]
    assert found["used"] and found["version"].startswith("1.")
    ws = rec.insights["waits"]["pg_wait_sampling"]
    _check_bounds(ws)
    assert ws["source"].startswith("pg_wait_sampling 1.")
    if not found["samples_cpu"]:  # Debian 12's 1.1.4: no CPU samples
        assert ws["of"] == "waiting time" and "CPU" not in {e["event"] for e in ws["events"]}
    assert rec.insights["waits"]["events"]  # pg_stat_activity's profile stays beside it
    shown = " ".join(pgrig("runs", "show", str(rec.id)).stdout.split())
    assert "pg_wait_sampling" in shown and f"of {ws['active_seen']:,} samples" in shown
    others = [r["id"] for r in json.loads(pgrig("runs", "list", "--json").stdout)
              if r["id"] != rec.id and r["status"] == "ok"]  # fmt: skip
    other = others[0] if others else _run(lab).id
    compared = pgrig("runs", "compare", str(other), str(rec.id)).stdout
    waits_part = compared.lower().split("wait profile", 1)[1]
    assert "samples: a" in waits_part and "% [" in waits_part


@pytest.mark.parametrize("mode", ["off"])  # sampled: the same path, plus its sample
def test_an_interrupted_run_keeps_its_progress_figures(lab: str, mode: str) -> None:
    argv = ["pgrig", "run", lab, "--workload", "pgbench:select-only", "-c", "2",
            "--duration", "30", "--txlog", mode, "--json"]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    servers.wait_for_running()
    servers.wait_for_measuring(proc, seconds=3)  # at least 2 progress lines in the window
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = json.loads(out)  # one run asked: one object, interrupted or not
    assert doc["status"] == "aborted"
    rec = Archive(None).get_run(doc["id"])
    assert rec is not None and rec.txlog == mode
    derived = rec.extra["figures_from"]
    assert derived["source"] == "pgbench -P progress lines" and derived["lines"] >= 2
    assert "figures_from_progress" in {w["code"] for w in rec.warnings()}
    # independently, from the progress series: about one second per line
    series = rec.series["pgbench"]
    assert rec.transactions == pytest.approx(sum(series["tps"]), rel=0.05)
    assert rec.tps == pytest.approx(rec.transactions / rec.measured_s, rel=1e-3)
    lat = sum(t * x for t, x in zip(series["tps"], series["lat_avg"], strict=True))
    assert rec.latency.avg == pytest.approx(lat / sum(series["tps"]), rel=0.02)
    if mode == "sampled":
        assert rec.extra["latency_basis"]["population"] == rec.transactions
        assert rec.latency.p50 is not None
    else:
        assert rec.latency.p50 is None
    shown = pgrig("runs", "show", str(rec.id)).stdout
    assert "progress lines" in " ".join(shown.split())


def test_a_rare_script_gets_plans_beside_a_hot_one(lab: str, tmp_path: Path) -> None:
    hot, rare = tmp_path / "hot.sql", tmp_path / "rare.sql"
    hot.write_text(
        "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
    )
    rare.write_text("SELECT count(*) AS rare_branches FROM pgbench_branches WHERE bid > 0;\n")
    # 6 s: plan sampling is silent for the first second, then capped at 5 plans/s, so the
    # hot script reaches its 10 plans only after about 3 s of window
    out = pgrig("run", lab, "--workload", f"{hot}@500", "--workload", f"{rare}@1", "-c", "2",
                "-T", "6", "--txlog", "off", "--json")  # fmt: skip
    rec = Archive(None).get_run(json.loads(out.stdout)["id"])
    assert rec is not None and rec.status == "ok"
    top_up = rec.extra["plan_top_up"]
    (entry,) = top_up["scripts"]  # only the rare one: the hot one has its plans
    assert entry["name"].endswith("rare.sql") and "error" not in entry
    assert entry["expected_plans"] < 10 and entry["ran"] >= 1
    doc = rec.insights["plans"]
    rare_st = next(st for st in doc["statements"] if "rare_branches" in st["text"])
    assert rare_st["top_up_samples"] == entry["ran"]
    assert rare_st["samples"] >= entry["ran"] and doc["top_up_samples"] >= entry["ran"]
    shown = " ".join(pgrig("runs", "show", str(rec.id)).stdout.split())
    assert "plan top-up" in shown and "rare.sql" in shown
