"""A real version series: PostgreSQL 15 (Debian) and 18 (pgrig's cache), real pgbench, scale 1,
2 s runs, interleaved repeats; then a kill -9 in the middle of extending it and the resume;
then `track show` and the CI check say the same as the series.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers

from pgrig.errors import PgrigError

pytestmark = pytest.mark.integration

pgrig = functools.partial(servers.pgrig, check=False, timeout=280)
MEASURE = ["--workload", "pgbench:select-only", "--duration", "2", "--scale", "1"]


def _have(major: str) -> bool:
    from pgrig.provision.server import binaries

    try:
        binaries.find_bindir(major)
        return True
    except PgrigError:
        return False


@pytest.fixture(scope="module")
def home() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PG_DIR", str(servers.pg_build_cache()))  # 18 from the shared build cache
        with servers.scratch_home("pgrig-track-test-") as home:
            if not (_have("15") and _have("18")):
                pytest.skip("PostgreSQL 15 and 18 are both needed (pgrig pg install 18)")
            yield home


@pytest.fixture(scope="module")
def series(home: Path) -> dict:
    proc = pgrig("track", "v", "--versions", "15,18", *MEASURE, "--repeat", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_each_version_is_measured_on_its_own_cluster_with_interleaved_repeats(
    series: dict,
) -> None:
    doc = series["series"]
    points = {p["version"].split(".")[0]: p for p in doc["points"]}
    assert set(points) == {"15", "18"}
    assert points["15"]["source"] in ("system", "path", "pg_config")
    assert points["18"]["source"] == "pgrig"
    for p in points.values():
        assert p["status"] == "ok" and len(p["runs"]) == 2
        assert p["lower"] <= p["centre"] <= p["upper"]
        assert p["server_version"].startswith(f"PostgreSQL {p['version']}")
        assert p["env"] == f"trk-v-{p['version']}"
    runs = sorted(r for p in points.values() for r in p["runs"])
    order = [next(v for v, p in points.items() if r in p["runs"]) for r in runs]
    assert order == ["15", "18", "15", "18"]  # round-robin, not 15, 15, 18, 18
    (step,) = doc["steps"]
    assert step["from"] == points["15"]["version"] and step["verdict"] in (
        "faster", "slower", "equivalent", "inconclusive"
    )  # fmt: skip


def test_runs_keep_their_versions_and_link_to_the_series(series: dict) -> None:
    for p in series["series"]["points"]:
        for run_id in p["runs"]:
            proc = pgrig("runs", "show", str(run_id), "--json")
            assert proc.returncode == 0, proc.stderr
            rec = json.loads(proc.stdout)
            assert rec["study"] == "v" and rec["study_point"] == p["version"]
            assert rec["tags"]["track"] == "v" and rec["tags"]["version"] == p["version"]
            assert rec["server_major"] == int(p["version"].split(".")[0])


def test_show_and_check_say_what_the_series_says(series: dict) -> None:
    shown = json.loads(pgrig("track", "show", "v", "--json").stdout)
    assert shown["points"] == series["series"]["points"]
    assert shown["steps"] == series["series"]["steps"]
    proc = pgrig("track", "v", "--check", "--threshold", "2.5%", "--json")
    chk = json.loads(proc.stdout)["check"]
    assert chk["baseline"] == shown["points"][0]["version"]
    assert chk["newest"] == shown["points"][1]["version"]
    assert proc.returncode == (1 if chk["regression"] else 0)
    assert chk["regression"] is False  # 2 vs 2 repeats cannot reach 95%: never "confirmed"
    assert chk["insufficient"] is True


def test_kill_9_while_extending_then_the_same_command_resumes(series: dict) -> None:
    argv = ["pgrig", "track", "v", "--versions", "15,18", *MEASURE, "--repeat", "3"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        if "repeat 3" in line or time.monotonic() > deadline:
            break
    time.sleep(1.0)  # inside the run
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    again = pgrig(*argv[1:], "--json")
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)["series"]
    for p in doc["points"]:
        assert p["status"] == "ok" and len(p["runs"]) == 3, p
    listed = json.loads(pgrig("runs", "list", "--study", "v", "--json").stdout)
    statuses = [r["status"] for r in listed]
    assert "running" not in statuses  # the killed run is "lost", not stuck
    assert statuses.count("ok") == 6


def test_sigterm_stops_the_series_cleanly(series: dict, home: Path) -> None:
    argv = ["pgrig", "track", "v", "--versions", "15,18", *MEASURE, "--repeat", "4"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    for line in proc.stderr:
        if "repeat 4" in line or time.monotonic() > deadline:
            break
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert servers.exit_code_within(proc, 60) == 143  # SIGTERM: 128 + 15
    shown = json.loads(pgrig("track", "show", "v", "--json").stdout)
    assert shown["status"] == "interrupted"
    listed = json.loads(pgrig("runs", "list", "--study", "v", "--json").stdout)
    # the run SIGTERM stopped is archived "aborted" if it had begun; nothing stays "running"
    assert "running" not in [r["status"] for r in listed]
    for pid_file in home.glob("envs/trk-v-*/data/postmaster.pid"):  # no server left running
        pid = int(pid_file.read_text().split()[0])
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_destroy_removes_the_series_clusters_and_keeps_its_measurements(
    series: dict, home: Path
) -> None:
    clusters = sorted(p.name for p in home.glob("envs/trk-v-*"))
    assert len(clusters) == 2, clusters  # one per version
    before = json.loads(pgrig("track", "show", "v", "--json").stdout)
    proc = pgrig("track", "v", "--destroy", "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"series": "v", "destroyed": clusters}
    assert not list(home.glob("envs/trk-v-*"))
    assert not [p for p in servers.postmasters_under(home) if "trk-v-" in " ".join(p.cmdline())]
    after = json.loads(pgrig("track", "show", "v", "--json").stdout)
    assert after["points"] == before["points"]  # runs, centres and bounds stay in the archive
    refused = pgrig("track", "v", "--destroy", "--yes", "--versions", "18")
    assert refused.returncode != 0 and "--destroy measures nothing" in refused.stderr
