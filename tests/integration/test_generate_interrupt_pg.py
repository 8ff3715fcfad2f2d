"""A `db generate` that is stopped leaves nothing generating in the server: pgbench -i's
server-side generation (one INSERT ... generate_series) outlives its client otherwise."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
import servers
from servers import pgrig

pytestmark = pytest.mark.integration

GENERATE = ["db", "generate", "lab", "--db", "big", "--scenario", "pgbench", "--scale", "400"]


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    with servers.pgbench_lab("pgrig-generate-test-") as lab:
        yield lab


def _generating(lab: str) -> list[str]:
    port = json.loads(pgrig("env", "show", lab, "--json").stdout)["port"]
    out = servers.as_postgres(
        "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc",
        "SELECT application_name FROM pg_stat_activity WHERE application_name LIKE 'pgrig-gen%'",
    ).stdout  # fmt: skip
    return out.split()


def _start_and_wait_generating(lab: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(["pgrig", *GENERATE], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not _generating(lab):
        assert proc.poll() is None and time.monotonic() < deadline, "the generate never began"
        time.sleep(0.2)
    time.sleep(1.0)  # inside the server-side generation
    return proc


def test_sigterm_ends_the_server_side_generation_too(lab: str) -> None:
    proc = _start_and_wait_generating(lab)
    proc.send_signal(signal.SIGTERM)
    assert servers.exit_code_within(proc, 60) == 143
    assert _generating(lab) == []  # ended before pgrig exited, not minutes later


def test_after_kill_9_the_next_generate_ends_the_orphan_and_succeeds(lab: str) -> None:
    proc = _start_and_wait_generating(lab)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    orphans = _generating(lab)
    assert orphans == [f"pgrig-generate-{proc.pid}"]  # the server generates on for its client
    small = ["db", "generate", "lab", "--db", "big", "--scenario", "pgbench", "--scale", "1"]
    assert pgrig(*small, timeout=120).returncode == 0  # not behind the orphan's locks
    assert _generating(lab) == []


def test_data_that_cannot_fit_is_refused_before_anything_is_dropped(lab: str) -> None:
    before = _accounts(lab)
    done = pgrig("db", "generate", lab, "--scenario", "pgbench", "--scale", "99999999",
                 check=False)  # fmt: skip
    assert done.returncode == 2
    assert "--scale 99999999 needs about 1,364.2 TiB" in done.stderr and " free" in done.stderr
    assert _accounts(lab) == before == "100000"  # the scale-1 data is still there


def _accounts(env: str) -> str:
    port = json.loads(pgrig("env", "show", env, "--json").stdout)["port"]
    return servers.as_postgres(
        "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc",
        "SELECT count(*) FROM pgbench_accounts", "pgrig",
    ).stdout.strip()  # fmt: skip


def test_ctrl_c_on_a_sysbench_generate_says_what_it_left(lab: str) -> None:
    """Ctrl-C (SIGINT to the terminal's process group: pgrig and sysbench) on a sysbench
    prepare: exit 130 with a line saying what was interrupted and what was cleaned (the
    database it made, dropped again), never a bare blank line."""
    argv = ["pgrig", "db", "generate", lab, "--db", "sbint", "--scenario", "sysbench",
            "--tables", "8", "--table-size", "500000"]  # fmt: skip
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not subprocess.run(["pgrep", "-s", str(proc.pid), "sysbench"],
                             capture_output=True).stdout:  # fmt: skip
        assert proc.poll() is None and time.monotonic() < deadline, "sysbench never started"
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    assert servers.exit_code_within(proc, 60) == 130
    err = proc.stderr.read() if proc.stderr else ""
    assert "generating sysbench data in " + lab + "/sbint was interrupted" in err, err
    assert "database sbint, made by this generate, was dropped again" in err
    port = json.loads(pgrig("env", "show", lab, "--json").stdout)["port"]
    dbs = servers.as_postgres(
        "psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc",
        "SELECT datname FROM pg_database",
    ).stdout.split()  # fmt: skip
    assert "sbint" not in dbs
