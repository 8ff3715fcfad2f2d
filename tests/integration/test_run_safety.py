"""Crash-safe runs against a real PostgreSQL 15 environment and real pgbench (issue 10):
kill -9 and SIGTERM of `pgrig run`, one run per environment, a damaged environment repaired."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-safety-test-") as lab:
        yield lab


def _home() -> Path:
    return Path(os.environ["PGRIG_HOME"])


def _postmaster(lab: str) -> int:
    return int((_home() / "envs" / lab / "data" / "postmaster.pid").read_text().split()[0])


def _tree_masks(root: int) -> set[frozenset[int]]:
    """The distinct CPU masks of the postmaster and its children, every thread."""
    masks = set()
    for proc in [psutil.Process(root), *psutil.Process(root).children(recursive=True)]:
        try:
            for thread in proc.threads():
                masks.add(frozenset(os.sched_getaffinity(thread.id)))
        except (psutil.Error, OSError):
            continue
    return masks


def _exported(run_id: int) -> dict:
    return json.loads(pgrig("runs", "export", str(run_id), "--format", "json").stdout)


def _run_in_background(lab: str, *extra: str) -> subprocess.Popen[str]:
    # every transaction logged: an interrupted run keeps the figures of what it measured
    argv = ["pgrig", "run", lab, "-w", "pgbench:select-only", "--duration", "30", "--txlog", "full"]
    argv += ["--json"]
    return subprocess.Popen(
        [*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for_file(path: Path, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while not path.exists():
        assert time.time() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def _kill_9(proc: subprocess.Popen[str]) -> set[Path]:
    """kill -9 of `pgrig run`; returns its scratch directories (the next pgrig command removes
    them: load/core/lifecycle.py)."""
    workdirs = set()
    for child in psutil.Process(proc.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            for arg in child.cmdline():
                if arg.startswith("--log-prefix="):
                    workdirs.add(Path(arg.split("=", 1)[1]).parent)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    return workdirs


def _shm_of(command: str | None) -> list[str]:
    return [p for p in (command or "").split() if p.startswith("--log-prefix=/dev/shm/")]


@pytest.fixture
def own_work_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Work directories of this test's own. Any pgrig command on this host removes those of
    dead pgrig processes, and other workers' tests run pgrig commands all the time: a killed
    run's directory in /dev/shm could vanish before the test looks at it."""
    work = Path(tempfile.mkdtemp(prefix="pgrig-test-work-", dir="/dev/shm"))
    monkeypatch.setenv("PGRIG_WORK_DIR", str(work))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_kill_9_leaves_no_settings_or_pinning_for_the_next_run(
    lab: str, own_work_dir: Path
) -> None:
    usable = frozenset(os.sched_getaffinity(0))
    before = servers.show(lab, "work_mem")
    proc = _run_in_background(lab, "--set", "work_mem=2MB", "--server-cpus", "0")
    running = servers.wait_for_running()
    _wait_for_file(_home() / "envs" / lab / "run-journal.json")
    time.sleep(1.5)  # pgbench runs, the server is pinned
    root = _postmaster(lab)
    assert servers.show(lab, "work_mem") == "2MB"
    assert _tree_masks(root) == {frozenset({0})}

    # a second run is refused, naming the one in progress
    second = pgrig("run", lab, "-w", "pgbench:select-only", "-T", "1", check=False)
    assert second.returncode != 0
    assert f"run {running['id']} is in progress" in second.stderr
    assert len(second.stderr.strip().splitlines()) == 1
    # and so is changing the environment under it
    busy = pgrig("env", "set", lab, "work_mem=8MB", check=False)
    assert busy.returncode != 0 and f"run {running['id']}" in busy.stderr
    assert "--force" in busy.stderr
    generating = pgrig("db", "generate", lab, "--scale", "1", check=False)
    assert generating.returncode != 0 and f"run {running['id']} is in progress" in generating.stderr

    workdirs = _kill_9(proc)
    assert workdirs and all(w.is_dir() for w in workdirs)

    # the bar: the next `runs list` shows the run lost, removes its work directory and
    # undoes what the dead run changed
    listed = pgrig("runs", "list", "--json")
    assert not any(w.exists() for w in workdirs)
    [lost] = [r for r in json.loads(listed.stdout) if r["id"] == running["id"]]
    assert lost["status"] == "lost", lost
    assert "undone" in listed.stderr and "put back" in listed.stderr
    assert servers.show(lab, "work_mem") == before
    assert _tree_masks(root) == {usable}
    assert not (_home() / "envs" / lab / "run-journal.json").exists()

    # and the next run's record matches the live server
    rec = json.loads(pgrig("run", lab, "-w", "pgbench:select-only", "-T", "1", "--json").stdout)
    assert rec["status"] == "ok"
    full = _exported(rec["id"])
    assert before == "4MB" and full["settings"]["work_mem"]["setting"] == "4096"  # in kB
    assert full["settings_layers"]["run"] == {}
    assert servers.show(lab, "work_mem") == before
    assert "cpus" not in full["extra"] and not rec["server_cpus"]
    assert _tree_masks(root) == {usable}


def test_a_server_left_pinned_and_stale_is_restored_before_recording(lab: str) -> None:
    """No journal at all (pinned and reconfigured by hand): the run restores, then records."""
    usable = frozenset(os.sched_getaffinity(0))
    root = _postmaster(lab)
    for pid in [root, *(c.pid for c in psutil.Process(root).children())]:
        os.sched_setaffinity(pid, {0})
    conf = _home() / "envs" / lab / "data" / "pgrig.conf"
    original = conf.read_text()
    conf.write_text(original + "work_mem = '3MB'\n")
    port = json.loads(pgrig("env", "show", lab, "--json").stdout)["port"]
    subprocess.run(
        [
            "psql",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "postgres",
            "-Atc",
            "SELECT pg_reload_conf()",
        ],
        check=True,
        capture_output=True,
    )
    time.sleep(0.3)
    assert servers.show(lab, "work_mem") == "3MB"
    proc = pgrig("run", lab, "-w", "pgbench:select-only", "-T", "1", "--json")
    rec = json.loads(proc.stdout)
    assert "server settings restored before the run" in proc.stderr
    assert "CPU pinning" in proc.stderr
    assert _exported(rec["id"])["settings"]["work_mem"]["setting"] == "4096"
    assert conf.read_text() == original
    assert _tree_masks(root) == {usable}


def test_sigterm_archives_an_aborted_run_with_its_series(lab: str) -> None:
    proc = _run_in_background(lab, "--set", "work_mem=2MB")
    servers.wait_for_running()
    servers.wait_for_measuring(proc)  # two measured seconds: the partial series has >= 2 points
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    delay = time.monotonic() - t0
    print(f"SIGTERM to archived 'aborted': {delay:.2f} s")  # the bar: 5 s
    assert proc.returncode == 143, err  # 128 + SIGTERM, as a shell reports it (issue 25)
    assert "SIGTERM received" in err
    rec = json.loads(out)  # one run asked: one object, interrupted or not
    assert rec["status"] == "aborted" and rec["error"] == "stopped by SIGTERM"
    shown = json.loads(pgrig("runs", "show", str(rec["id"]), "--json").stdout)
    assert shown["status"] == "aborted"
    exported = _exported(rec["id"])
    assert len(exported["series"]["pgbench"]["t"]) >= 2  # the partial series is archived
    assert rec["transactions"] > 0
    for prefix in _shm_of(rec["command"]):
        assert not Path(prefix.split("=", 1)[1]).parent.exists()
    assert servers.show(lab, "work_mem") != "2MB"
    assert not (_home() / "envs" / lab / "run-journal.json").exists()
    found = subprocess.run(["pgrep", "-f", _shm_of(rec["command"])[0]], capture_output=True)
    assert not found.stdout.strip()


def test_a_removed_data_directory_is_repaired(lab: str) -> None:
    pgrig("env", "create", "fragile", "--pg", "15")
    data = _home() / "envs" / "fragile" / "data"
    shmid = (data / "postmaster.pid").read_text().splitlines()[6].split()[1]
    servers.remove_under_a_running_server(data)  # by hand, with the server running
    proc = pgrig("run", "fragile", "-w", "pgbench:select-only", "-T", "1", check=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "pgrig env repair fragile" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    repaired = pgrig("env", "repair", "fragile")
    assert "re-created empty" in repaired.stderr
    assert (data / "PG_VERSION").exists()
    assert shmid not in servers.sysv_segments()  # the old server freed its shared memory
    pgrig("db", "generate", "fragile", "--scale", "1")
    rec = json.loads(
        pgrig("run", "fragile", "-w", "pgbench:select-only", "-T", "1", "--json").stdout
    )
    assert rec["status"] == "ok"
    pgrig("env", "destroy", "fragile", "--yes")


def test_sigterm_of_a_study_archives_its_run_aborted(lab: str, tmp_path: Path) -> None:
    study = tmp_path / "long.toml"
    study.write_text(
        f'[study]\nname = "long"\n\n[environment]\nname = "{lab}"\ncreate = false\n\n'
        '[dataset]\nscenario = "pgbench"\nscale = 1\n\n'
        '[run]\nworkload = "pgbench:select-only"\nduration = "30s"\n\n'
        '[[iterations]]\nname = "only"\n'
    )
    proc = subprocess.Popen(
        ["pgrig", "study", "run", str(study), "--no-report"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for_file(_home() / "envs" / lab / "run-journal.json")  # its run has started
    time.sleep(2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    print(f"study: SIGTERM to exit: {time.monotonic() - t0:.2f} s")
    assert proc.returncode == 143, err
    assert "interrupted" in err
    [rec] = json.loads(pgrig("runs", "list", "--study", "long", "--json").stdout)
    assert rec["status"] == "aborted" and rec["error"] == "stopped by SIGTERM"
    studies = json.loads(pgrig("study", "list", "--json").stdout)
    assert any(s["name"] == "long" and s["status"] == "interrupted" for s in studies)
    assert not (_home() / "envs" / lab / "run-journal.json").exists()


def test_kill_9_leaves_pgbouncer_unpinned_too(lab: str) -> None:
    usable = frozenset(os.sched_getaffinity(0))
    pgrig("env", "pooler", lab, "add")
    try:
        bouncer = int(next((_home() / "envs" / lab / "pooler").glob("*.pid")).read_text())
        proc = _run_in_background(lab, "--via", "pooler", "--server-cpus", "0")
        servers.wait_for_running()
        _wait_for_file(_home() / "envs" / lab / "run-journal.json")
        time.sleep(1.5)
        assert _tree_masks(bouncer) == {frozenset({0})}
        _kill_9(proc)
        pgrig("env", "start", lab)  # the next command touching the environment
        assert _tree_masks(bouncer) == {usable}
        assert _tree_masks(_postmaster(lab)) == {usable}
    finally:
        pgrig("env", "pooler", lab, "remove")
