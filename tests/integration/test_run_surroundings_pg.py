"""A run's surroundings not as it expects, against a real PostgreSQL 15 and pgbench: real full
disks (small tmpfs mounts): a work directory without room fails the run instead of recording 0
TPS, and artifacts filling up mid-run fail it with ENOSPC, its figures printed, its settings
undone, nothing half-written left behind; two archives' run 1 keep their own files; an ALTER
SYSTEM overriding a settings layer is named, never silent (issue 25, must-fix 2 and 3)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-hostile-test-") as lab:
        yield lab


@contextlib.contextmanager
def _tmpfs(size: str, where: Path | None = None) -> Iterator[Path]:
    path = where or Path(tempfile.mkdtemp(prefix="pgrig-full-"))
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        if where is None:
            path.rmdir()
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)
        if where is None:  # the mount point this test made: nothing of it stays in /tmp
            with contextlib.suppress(OSError):
                path.rmdir()


def _fill(where: Path) -> None:
    with contextlib.suppress(OSError), open(where / "filler", "wb") as f:
        while True:
            f.write(b"\0" * 65536)
            f.flush()


def test_a_full_work_dir_fails_the_run_and_never_records_zero(lab: str) -> None:
    with _tmpfs("64k") as tiny:
        proc = subprocess.run(
            ["pgrig", "run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "3", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "PGRIG_WORK_DIR": str(tiny)},
        )
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1, proc.stderr
    assert doc["status"] == "failed"
    assert doc["tps"] != 0 and doc["transactions"] != 0  # never 0 as a result
    assert "summary" in doc["error"]  # the disagreement with pgbench's own summary, named
    shown = json.loads(pgrig("runs", "show", str(doc["id"]), "--json").stdout)
    assert shown["status"] == "failed" and shown["tps"] != 0


def test_artifacts_filling_mid_run_fail_it_with_enospc_keeping_its_figures(lab: str) -> None:
    home = Path(os.environ["PGRIG_HOME"])
    before = servers.show(lab, "work_mem")
    with _tmpfs("512k", home / "artifacts") as artifacts:
        # -T 10: the filler must start mid-run even when `runs list` (the poll below) takes
        # seconds on a loaded CI machine; with -T 4 the run was over before it (exit 0).
        argv = ["pgrig", "run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "10"]
        proc = subprocess.Popen(
            [*argv, "--set", "work_mem=7MB"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        running = servers.wait_for_running()
        filler = threading.Thread(target=_fill, args=(artifacts,))
        time.sleep(1.0)
        filler.start()
        out, err = proc.communicate(timeout=120)
        filler.join()
        assert servers.show(lab, "work_mem") == before  # undone by the run itself, at once
        left = sorted(str(p.relative_to(artifacts)) for p in artifacts.rglob("*"))
        assert not [p for p in left if p.endswith(".part")], left
    assert proc.returncode == 1, err
    assert f"run {running['id']} failed" in out  # the result, on stdout
    assert "No space left on device (ENOSPC)" in out
    assert "tps " in out and "transactions " in out  # what it measured, printed
    listed = json.loads(pgrig("runs", "list", "--json").stdout)
    mine = next(r for r in listed if r["id"] == running["id"])
    assert mine["status"] == "failed" and mine["tps"] and mine["tps"] > 0
    assert "ENOSPC" in (mine["error"] or "")


def test_two_archives_run_1_keep_their_own_files(lab: str, tmp_path: Path) -> None:
    home = Path(os.environ["PGRIG_HOME"])
    docs = {}
    for name in ("a", "b"):
        url = str(tmp_path / f"{name}.sqlite")
        argv = ["run", lab, "-w", "pgbench:select-only", "-T", "1", "--archive", url, "--json"]
        docs[name] = json.loads(pgrig(*argv).stdout)
        assert docs[name]["id"] == 1
    shown = {
        name: json.loads(
            pgrig(
                "runs", "show", "1", "--json", "--archive", str(tmp_path / f"{name}.sqlite")
            ).stdout
        )
        for name in docs
    }
    a_file = home / "artifacts" / shown["a"]["artifacts"]["pgbench.stdout"]
    b_file = home / "artifacts" / shown["b"]["artifacts"]["pgbench.stdout"]
    assert a_file != b_file and a_file.is_file() and b_file.is_file()
    pgrig("runs", "delete", "1", "--yes", "--archive", str(tmp_path / "b.sqlite"))
    assert a_file.is_file() and not b_file.exists()  # b's delete never touches a's run 1


def _psql(lab: str, sql: str) -> None:
    port = json.loads(pgrig("env", "show", lab, "--json").stdout)["port"]
    subprocess.run(
        ["psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc", sql],
        capture_output=True,
        text=True,
        check=True,
    )


def test_alter_system_overriding_a_layer_is_named_never_silent(lab: str) -> None:
    _psql(lab, "ALTER SYSTEM SET work_mem = '77MB'")
    _psql(lab, "SELECT pg_reload_conf()")
    try:
        before = json.loads(pgrig("runs", "list", "--json").stdout)
        refused = pgrig("run", lab, "-w", "pgbench:select-only", "-T", "1", "--set",
                        "work_mem=8MB", check=False)  # fmt: skip
        assert refused.returncode != 0
        message = " ".join(refused.stderr.split())
        assert "postgresql.auto.conf (ALTER SYSTEM) sets work_mem = '77MB'" in message
        assert "ALTER SYSTEM RESET work_mem" in message and "Traceback" not in message
        assert json.loads(pgrig("runs", "list", "--json").stdout) == before  # nothing recorded
        assert servers.show(lab, "work_mem") == "77MB"  # and the run layer went again
        changed = pgrig("env", "set", lab, "work_mem=9MB")
        assert "postgresql.auto.conf (ALTER SYSTEM) sets work_mem" in " ".join(
            changed.stderr.split()
        )
        shown = json.loads(pgrig("env", "show", lab, "--json").stdout)
        assert shown["auto_conf"] == {"work_mem": "77MB"}
        assert (
            "postgresql.auto.conf (ALTER SYSTEM): work_mem = '77MB'"
            in pgrig("env", "show", lab).stdout
        )
    finally:
        _psql(lab, "ALTER SYSTEM RESET work_mem")
        _psql(lab, "SELECT pg_reload_conf()")
        pgrig("env", "set", lab, "--reset", "work_mem")
    ok = json.loads(pgrig("run", lab, "-w", "pgbench:select-only", "-T", "1", "--set",
                          "work_mem=8MB", "--json").stdout)  # fmt: skip
    shown_run = json.loads(pgrig("runs", "export", str(ok["id"]), "--format", "json").stdout)
    assert ok["status"] == "ok" and shown_run["settings"]["work_mem"]["setting"] == "8192"
