"""What pgrig says about a run on an environment with sync replicas is what ran (issue 30):
the wait profile measures the workload, not the walsenders (class 4); a run's
synchronous_commit is the run layer's and the sync mode row the effective one (class 5); a
replica that is down has no lag to show (class 3). Real PG18, two replicas, sync on, ports
27300-27349 (PGRIG_PORT_RANGE)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

PORTS = "27300-27349"


@pytest.fixture(scope="module")
def lab() -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PGRIG_PORT_RANGE", PORTS)
        with servers.pg18_lab("pgrig-truth-test-", "lab", "--replicas", "2", "--sync", "on") as h:
            yield h


def _run(*flags: str) -> dict:
    out = pgrig("run", "lab", "-w", "pgbench:select-only", "-c", "2", "-T", "3", *flags,
                "--json", timeout=120)  # fmt: skip
    rec = json.loads(out.stdout)
    assert rec["status"] == "ok", rec["error"]
    return rec


def test_waits_and_settings_of_a_run_over_sync_replicas(lab: Path) -> None:
    rec = _run("--set", "synchronous_commit=local")
    shown = json.loads(pgrig("runs", "show", str(rec["id"]), "--json").stdout)
    # class 4: the walsenders of the sync replicas are not the workload
    assert shown["waits"]["collected"] is True
    assert "WalSender" not in json.dumps(shown["waits"])
    series = json.loads(pgrig("runs", "export", str(rec["id"]), "--format", "json").stdout)
    for kind in ("pg", "waits"):
        assert not [c for c in series["series"][kind] if "WalSender" in c], kind
    assert "(30 snapshots)" in shown["wait_sampling"]["why"]  # 10 Hz over 3 s
    # class 5: the run set synchronous_commit, the topology the standby names
    text = pgrig("runs", "show", str(rec["id"])).stdout
    lines = [ln.strip() for ln in text.splitlines()]  # the settings table, one per setting
    at = lines.index("synchronous_commit")
    assert lines[at + 1 : at + 5] == ["value: local", "default: on",
                                      "source: configuration file", "layer: run"]  # fmt: skip
    at = lines.index("synchronous_standby_names")
    assert lines[at + 4] == "layer: topology"
    sync_row = next(line for line in text.splitlines() if line.startswith("sync mode"))
    assert "local (synchronous_commit from layer run; the topology's mode is on)" in sync_row


def test_a_replica_that_is_down_has_no_lag_to_show(lab: Path) -> None:
    pid_file = lab / "envs" / "lab" / "replicas" / "r2" / "data" / "postmaster.pid"
    os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
    try:
        rec = _run()
        text = pgrig("runs", "show", str(rec["id"])).stdout
        r2 = next(line for line in text.splitlines() if line.startswith("replica r2"))
        assert "max replay lag unknown: not streaming in" in r2
        assert " 0 B" not in r2
    finally:
        pgrig("env", "repair", "lab", check=False)
        pgrig("env", "start", "lab", check=False)


def test_both_sync_replicas_killed_mid_run_end_it_and_its_backends(
    lab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Class 10: with sync on and both replicas killed while pgbench writes, the commits wait
    in SyncRep and pgbench never ends: the run ends failed (its overrun, 2 s here), says what
    the server waited for, and pgrig terminates its backends left on the primary (one in
    SyncRep holding row locks, others waiting for them)."""
    monkeypatch.setenv("PGRIG_RUN_OVERRUN_S", "2")
    proc = subprocess.Popen(
        ["pgrig", "run", "lab", "-w", "pgbench:tpcb", "-c", "2", "-T", "8", "--txlog", "full",
         "--json"],  # full: no probe, the one pgbench is the run's
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    port = json.loads(pgrig("env", "show", "lab", "--json").stdout)["port"]

    def run_sessions() -> list[str]:  # the run's pgbench connected (its own sessions' name)
        return servers.as_postgres(
            "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc",
            "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'pgbench-of-pgrig-%'",
        ).stdout.split()  # fmt: skip

    try:
        deadline = time.monotonic() + 120
        while not run_sessions():
            assert proc.poll() is None and time.monotonic() < deadline, "pgbench never started"
            time.sleep(0.1)
        for name in ("r1", "r2"):
            pid_file = lab / "envs" / "lab" / "replicas" / name / "data" / "postmaster.pid"
            os.kill(int(pid_file.read_text().split()[0]), signal.SIGKILL)
        assert servers.exit_code_within(proc, 180) == 1
        out = proc.stdout.read() if proc.stdout else ""
        doc = json.loads(out)
        assert doc["status"] == "failed"
        assert "IPC:SyncRep" in doc["error"] and "terminated" in doc["error"], doc["error"]
        ended = [w for w in doc["warnings"] if w["code"] == "backends_ended"]
        assert ended and "synchronous commit with no synchronous replica" in ended[0]["message"]
        assert run_sessions() == []  # nothing of the run waits on the primary for a replica
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        pgrig("env", "repair", "lab", check=False)
        pgrig("env", "start", "lab", check=False)


def _run_count() -> int:
    return len(json.loads(pgrig("runs", "list", "--json").stdout))


@pytest.mark.parametrize(
    "bad",
    [["--set", "nosuch=1"], ["--set", "work_mem=-5"], ["-w", "pgbench:nosuch"]],
    ids=["unknown-setting", "bad-value", "unknown-builtin"],
)
def test_a_bad_series_is_refused_before_anything_is_made(lab: Path, bad: list[str]) -> None:
    runs = _run_count()
    out = pgrig("track", "bad", "--versions", "18", "-w", "pgbench:select-only", "-T", "3",
                "--repeat", "1", *bad, "--check", "--json", check=False)  # fmt: skip
    assert out.returncode != 0
    assert "nosuch" in out.stderr + out.stdout or "work_mem=-5" in out.stderr + out.stdout
    assert pgrig("track", "show", "bad", check=False).returncode != 0  # no series
    assert not list((lab / "envs").glob("trk-bad-*"))  # no environment
    assert _run_count() == runs  # no run


def test_a_backup_dir_the_server_cannot_write_is_refused_up_front(lab: Path) -> None:
    runs = _run_count()
    immutable = lab / "immutable"
    immutable.mkdir()
    if subprocess.run(["chattr", "+i", str(immutable)], check=False).returncode != 0:
        pytest.skip("chattr +i is not supported here")
    try:
        out = pgrig("run", "lab", "-w", "backup:basebackup-full", "--backup-dir", str(immutable),
                    check=False)  # fmt: skip
    finally:
        subprocess.run(["chattr", "-i", str(immutable)], check=False)
    assert out.returncode != 0
    assert f"--backup-dir {immutable}: cannot make" in out.stderr
    assert "PermissionError" not in out.stderr + out.stdout
    missing = lab / "no-such-dir"
    out = pgrig("run", "lab", "-w", "backup:basebackup-full", "--backup-dir", str(missing),
                check=False)  # fmt: skip
    assert out.returncode != 0 and f"--backup-dir {missing} does not exist" in out.stderr
    a_file = lab / "a-file"
    a_file.write_text("")
    out = pgrig("run", "lab", "-w", "backup:basebackup-full", "--backup-dir", str(a_file),
                check=False)  # fmt: skip
    assert out.returncode != 0 and f"--backup-dir {a_file} is not a directory" in out.stderr
    assert _run_count() == runs  # nothing archived: no failed run either


def test_stopped_replicas_are_reported_by_repair_and_started_by_start(lab: Path) -> None:
    pgrig("env", "start", "lab")
    r1 = lab / "envs" / "lab" / "replicas" / "r1" / "data" / "postmaster.pid"
    os.kill(int(r1.read_text().split()[0]), signal.SIGKILL)
    deadline = time.time() + 30
    while time.time() < deadline and r1.exists() and _alive(r1):
        time.sleep(0.2)
    doc = json.loads(pgrig("env", "repair", "lab", "--check", "--json").stdout)
    assert doc["stopped"] == ["r1"]
    out = pgrig("env", "repair", "lab")
    assert "replica r1 is stopped" in out.stderr
    out = pgrig("env", "start", "lab")
    assert "replica started: r1" in out.stderr
    assert "already running" in out.stderr  # the primary was, and it says so apart


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _alive(pid_file: Path) -> bool:
    try:
        os.kill(int(pid_file.read_text().split()[0]), 0)
    except (OSError, ValueError):
        return False
    return True


def test_a_series_reuses_its_environment_only_as_it_made_it(lab: Path) -> None:
    args = ["--versions", "18", "-w", "pgbench:select-only", "-T", "1", "--repeat"]
    pgrig("track", "tr", *args, "1", timeout=300)
    env = next(p.name for p in (lab / "envs").glob("trk-tr-*"))
    pgrig("env", "set", env, "synchronous_commit=off")
    out = pgrig("track", "tr", *args, "2", timeout=300)
    assert "settings changed since the series made it, put back to the series'" in out.stderr
    assert "synchronous_commit=off (series: unset)" in out.stderr
    shown = json.loads(pgrig("env", "show", env, "--json").stdout)
    assert "synchronous_commit" not in json.dumps(shown.get("layers", {}).get("environment"))
    doc = json.loads(pgrig("track", "show", "tr", "--json").stdout)
    assert "synchronous_commit" not in doc["points"][0]["settings"]  # every run had it on
    # an environment a user made under a series' name is not taken over
    pgrig("env", "create", "trk-mine-" + env.split("-")[-1], "--pg", "18", timeout=300)
    runs_before = pgrig("runs", "list", "--json").stdout
    out = pgrig("track", "mine", *args, "1", check=False, timeout=300)
    assert out.returncode == 2
    assert "made by a user, not by a series: series 'mine' does not take it over" in out.stderr
    # refused before anything was made: no series, no run row
    assert pgrig("runs", "list", "--json").stdout == runs_before
    assert "no series 'mine' in archive" in pgrig("track", "show", "mine", check=False).stderr
    pgrig("env", "destroy", "trk-mine-" + env.split("-")[-1], "--yes")
    pgrig("track", "tr", "--destroy", "--yes")
