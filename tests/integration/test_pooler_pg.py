"""pgbouncer in front of a real PostgreSQL 15 environment: lifecycle, secrets, runs, errors."""

from __future__ import annotations

import functools
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import servers

from pgrig.provision import pooler
from pgrig.provision.state.environment import Environment
from pgrig.provision.system import osuser

pytestmark = pytest.mark.integration

if not (shutil.which("pgbouncer") or Path("/usr/sbin/pgbouncer").exists()):
    pytest.skip("pgbouncer is not installed", allow_module_level=True)


pgrig = functools.partial(servers.pgrig, timeout=180)


@pytest.fixture(scope="module")
def lab() -> Iterator[str]:
    """A PG15 environment created with a pooler, pgbench scale 1 and 100,000 tickets."""
    with servers.scratch_home("pgrig-pooler-test-"):
        pgrig("env", "create", "lab", "--pg", "15", "--pooler", "pgbouncer")
        pgrig("db", "generate", "lab", "--scale", "1")
        pgrig("db", "generate", "lab", "--db", "tix", "--scenario", "tickets", "--rows", "100000")
        yield "lab"


def run_json(*args: str, check: bool = True) -> dict:
    return json.loads(pgrig("run", *args, "--json", check=check).stdout)


def gone(pid: int) -> bool:
    """Exited (a zombie left for a PID 1 that does not reap counts as exited)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def passwords(env: Environment) -> list[str]:
    return [ln.rsplit(":", 1)[1] for ln in pooler.passfile(env).read_text().splitlines()]


def test_created_with_the_environment_and_secrets_stay_private(lab: str) -> None:
    env = Environment.load(lab)
    cfg = pooler.config_of(env)
    assert cfg is not None and pooler.status(env) == "running"
    auth, passfile = pooler.auth_file(env), pooler.passfile(env)
    assert auth.stat().st_mode & 0o777 == 0o600
    assert auth.stat().st_uid == osuser.server_user().uid
    assert passfile.stat().st_mode & 0o777 == 0o600 and passfile.stat().st_uid == os.geteuid()
    lines = auth.read_text().splitlines()
    assert lines[0].startswith('"pgrig_pool" "SCRAM-SHA-256$')
    assert lines[1].startswith('"pgrig_stats" "SCRAM-SHA-256$')
    secrets = passwords(env)
    assert len(secrets) == 2 and all(len(s) >= 24 for s in secrets)
    shown = pgrig("env", "pooler", lab, "show", "--json").stdout + pgrig("env", "show", lab).stdout
    texts = [
        (env.dir / "env.json").read_text(),
        shown,
        auth.read_text(),
        *(p.read_text() for p in (env.dir / "pooler").glob("pgbouncer-*.*")),
        env.logfile.read_text(),
    ]
    for secret in secrets:
        assert not any(secret in t for t in texts)


def test_processes_run_unprivileged_on_loopback_with_enough_files(lab: str) -> None:
    env = Environment.load(lab)
    cfg = pooler.config_of(env)
    assert cfg is not None
    (pid,) = pooler.pids(env)
    proc = psutil.Process(pid)
    assert proc.uids().real == osuser.server_user().uid
    limits = Path(f"/proc/{pid}/limits").read_text()
    soft = next(ln.split()[3] for ln in limits.splitlines() if ln.startswith("Max open files"))
    assert soft == "unlimited" or int(soft) >= cfg.nofile
    listening = [c for c in proc.net_connections("tcp") if c.status == psutil.CONN_LISTEN]
    assert {c.laddr.ip for c in listening} == {"127.0.0.1"}
    assert {c.laddr.port for c in listening} == {cfg.port}


def test_runs_through_the_pooler_record_its_statistics(lab: str) -> None:
    out = run_json(
        lab, "-w", "pgbench:select-only", "-c", "8", "-j", "2", "-T", "2", "--via", "pooler"
    )
    assert out["status"] == "ok" and out["via"] == "pgbouncer" and out["transactions"] > 0
    from pgrig.archive.store import Archive

    rec = Archive(None).get_run(out["id"])
    pool = rec.series["pooler"]
    assert {"cl_active", "cl_waiting", "sv_active", "sv_idle", "maxwait_ms", "xact_per_s"} <= set(
        pool
    )
    assert max(v or 0 for v in pool["cl_active"]) > 0
    assert "proc_pooler_cpu" in rec.series["os"]
    info = rec.extra["pooler"]
    assert info["kind"] == "pgbouncer" and info["version"].startswith("1.")
    assert info["totals"]["xact_count"] >= out["transactions"]
    assert rec.extra["connection"] == {"via": "pgbouncer", "connect": "tcp"}
    assert "PGPASSWORD" not in (rec.command or "") and "password" not in (rec.command or "")


def test_tickets_read_and_write_through_socket_and_tcp(lab: str) -> None:
    read = run_json(lab, "--db", "tix", "-w", "tickets:read", "-c", "4", "-j", "2", "-T", "2",
                    "--via", "pooler", "--connect", "socket")  # fmt: skip
    assert read["status"] == "ok" and read["scenario"] == "tickets" and read["transactions"] > 0
    write = run_json(lab, "--db", "tix", "-w", "tickets:write", "-c", "4", "-j", "2", "-T", "2",
                     "--connect", "socket", "--client-cpus", "0")  # fmt: skip
    assert write["status"] == "ok" and write["transactions"] > 0
    assert write["command"].startswith("taskset -c 0 ")


def test_bad_requests_are_refused_before_anything_starts(lab: str) -> None:
    before = json.loads(pgrig("runs", "list", "--json").stdout)
    cases = [
        (["-c", "3000", "--via", "pooler"], "3000 clients exceed max_client_conn=2000"),
        (["-c", "120"], "120 clients exceed max_connections=100 on env lab"),
        (["-c", "2", "--via", "pooler", "-M", "prepared"], "--protocol prepared does not work"),
        (["-c", "2", "--server-cpus", "99-99"], "--server-cpus: CPU 99 not available"),
        (["-c", "2", "--server-cpus", "99cores"], "--server-cpus 99cores: 99 CPUs asked"),
        (["-c", "2", "--client-cpus", "0cores"], "--client-cpus must be a whole number of cores"),
    ]
    for extra, message in cases:
        proc = pgrig("run", lab, "-w", "pgbench:select-only", "-j", "1", "-T", "1", *extra,
                     check=False)  # fmt: skip
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    proc = pgrig("env", "pooler", lab, "add", "--pool-size", "0", check=False)
    assert proc.returncode == 2 and "--pool-size must be >= 1 (got 0)" in proc.stderr
    assert json.loads(pgrig("runs", "list", "--json").stdout) == before


def test_stop_start_restart_remove(lab: str) -> None:
    env = Environment.load(lab)
    old = pooler.pids(env)
    pgrig("env", "stop", lab)
    assert pooler.pids(env) == [] and all(gone(p) for p in old)
    pgrig("env", "start", lab)
    assert pooler.status(env) == "running"
    # the pooler alone, each way twice: the second says nothing was to be done
    running = pooler.pids(env)
    assert pgrig("env", "pooler", lab, "stop").stderr.strip() == f"{lab}: pooler stopped"
    assert pooler.pids(env) == [] and all(gone(p) for p in running)
    assert pgrig("env", "pooler", lab, "stop").stderr.strip() == f"{lab}: pooler was not running"
    assert pgrig("env", "pooler", lab, "start").stderr.strip() == f"{lab}: pooler started"
    assert pooler.status(env) == "running"
    assert pgrig("env", "pooler", lab, "start").stderr.strip() == f"{lab}: pooler already running"
    secrets = passwords(env)
    pgrig("env", "pooler", lab, "restart")
    assert pooler.status(env) == "running" and passwords(env) != secrets
    out = run_json(
        lab, "-w", "pgbench:select-only", "-c", "2", "-j", "1", "-T", "1", "--via", "pooler"
    )
    assert out["status"] == "ok"
    pids = pooler.pids(env)
    pgrig("env", "pooler", lab, "remove")
    env = Environment.load(lab)
    assert env.pooler is None and all(gone(p) for p in pids)
    assert not (env.dir / "pooler").exists() and not pooler.passfile(env).exists()
    import psycopg

    with psycopg.connect(env.conninfo("postgres")) as conn:
        assert (
            conn.execute("SELECT 1 FROM pg_roles WHERE rolname = 'pgrig_pool'").fetchone() is None
        )
    proc = pgrig("run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "1", "--via", "pooler",
                 check=False)  # fmt: skip
    assert proc.returncode == 2 and "environment 'lab' has no pooler" in proc.stderr
    # several processes sharing the port, each asked for its statistics
    pgrig("env", "pooler", lab, "add", "pgbouncer", "--processes", "2", "--pool-size", "5")
    env = Environment.load(lab)
    assert len(pooler.pids(env)) == 2
    out = run_json(
        lab, "-w", "pgbench:select-only", "-c", "16", "-j", "2", "-T", "2", "--via", "pooler"
    )
    assert out["status"] == "ok"
    from pgrig.archive.store import Archive

    rec = Archive(None).get_run(out["id"])
    assert max(v or 0 for v in rec.series["pooler"]["processes_up"]) == 2
    assert max(v or 0 for v in rec.series["os"]["proc_pooler_count"]) == 2
    proc = pgrig("run", lab, "-w", "pgbench:select-only", "-c", "2", "-T", "1", "--via", "pooler",
                 "--connect", "socket", check=False)  # fmt: skip
    assert proc.returncode == 2 and "reaches only one of the 2 pgbouncer processes" in proc.stderr
