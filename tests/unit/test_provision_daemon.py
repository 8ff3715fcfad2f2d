"""Daemon: a pid in a file is a running server only if it lives, is no zombie and runs it."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgrig.provision.server import postmaster
from pgrig.provision.server.daemon import POSTGRES, Daemon, pid_in_file
from pgrig.provision.state.environment import Environment


@pytest.fixture
def fake_postgres(tmp_path: Path) -> Iterator[Path]:
    """`sleep` under the name postgres: /proc/<pid>/stat then says "postgres", as for a server."""
    exe = tmp_path / "postgres"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", exe)
    yield exe


def _zombie(exe: Path) -> subprocess.Popen:
    """A child that exited and is not reaped yet (what kill -9 leaves when PID 1 never reaps)."""
    proc = subprocess.Popen([str(exe), "0"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc


def test_a_live_process_of_the_program_is_found(fake_postgres: Path, tmp_path: Path) -> None:
    proc = subprocess.Popen([str(fake_postgres), "30"])
    try:
        pid_file = tmp_path / "postmaster.pid"
        pid_file.write_text(f"{proc.pid}\n/data\n")
        found = Daemon.from_file(pid_file, POSTGRES)
        assert found is not None and found.pid == proc.pid
        assert Daemon.find(proc.pid, ("pgbouncer",)) is None  # a pid reused by another program
        found.stop(timeout=5)
        assert not found.running()
        assert Daemon.from_file(pid_file, POSTGRES) is None
    finally:
        proc.kill()
        proc.wait()


def test_a_zombie_is_not_running(fake_postgres: Path) -> None:
    proc = _zombie(fake_postgres)
    try:
        assert Path(f"/proc/{proc.pid}").exists()  # kill(pid, 0) would still succeed
        assert Daemon.find(proc.pid, POSTGRES) is None
    finally:
        proc.wait()


@pytest.mark.parametrize("text", ["", "abc\n", "-5\n", "0\n"])
def test_garbage_pid_files_name_no_process(tmp_path: Path, text: str) -> None:
    f = tmp_path / "x.pid"
    f.write_text(text)
    assert pid_in_file(f) is None
    assert Daemon.from_file(f, POSTGRES) is None
    assert Daemon.from_file(tmp_path / "missing.pid", POSTGRES) is None


def _env(home: Path) -> Environment:
    env = Environment(name="lab", port=5999)
    env.datadir.mkdir(parents=True)
    env.socket_dir.mkdir(parents=True)
    return env


def test_locks_of_a_killed_postmaster_are_cleared(pgrig_home: Path, fake_postgres: Path) -> None:
    env = _env(pgrig_home)
    dead = _zombie(fake_postgres)
    try:
        (env.datadir / "postmaster.pid").write_text(f"{dead.pid}\n{env.datadir}\n")
        socket_lock = env.socket_dir / ".s.PGSQL.5999.lock"
        socket_lock.write_text(f"{dead.pid}\n{env.datadir}\n")
        postmaster._clear_stale_lock(env)
        assert not socket_lock.exists()
        assert not (env.datadir / "postmaster.pid").exists()
    finally:
        dead.wait()


def test_locks_of_a_live_postmaster_stay(pgrig_home: Path, fake_postgres: Path) -> None:
    env = _env(pgrig_home)
    live = subprocess.Popen([str(fake_postgres), "30"])
    try:
        (env.datadir / "postmaster.pid").write_text(f"{live.pid}\n{env.datadir}\n")
        socket_lock = env.socket_dir / ".s.PGSQL.5999.lock"
        socket_lock.write_text(f"{live.pid}\n{env.datadir}\n")
        postmaster._clear_stale_lock(env)
        assert socket_lock.exists()
        assert (env.datadir / "postmaster.pid").exists()
        assert postmaster.pid(env) == live.pid
    finally:
        live.kill()
        live.wait()
