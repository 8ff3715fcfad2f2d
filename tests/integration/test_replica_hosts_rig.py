"""Replicas on other hosts, for real: a primary on db1 and its streaming replica on db2 of the
namespace rig (scripts/test-hosts.sh: own sshd, own mount namespace, no route out), driven
through the `pgrig` command as a user would.

The rig of this module: 10.231.6.0/24, prefix "pgrrp", directory /var/lib/pgrig-rig-pgrrp (not
under /tmp: the hosts' private /tmp would hide it). db1 is provisioned by `pgrig host
provision` (Ansible; 30-100 s on a busy 2-core machine); db2 then gets db1's provisioned files
as hard links (what the same playbook would put there: /opt/pgrig, /var/lib/pgrig/pg,
/usr/local/bin) and its provisioning record, which halves the module's time (provisioning
itself is tests/integration/test_hosts_rig.py's). Covers: `env create --on db1
--replica-on db2` (pg_basebackup over the rig's bridge, a slot, pg_hba allowing db2's address
only, no password in argv, logs or files but the replica's passfile), env show/set --sync,
runs sampling lag and sending read-only load to the replica (`--target split`), the replica
host cut off mid-run under synchronous replication (the run fails in bounded time with its
figures, never stays "running"), a replica host unreachable at create (one line, nothing made
anywhere), replicas on the primary's own host (`--on db1 --replicas 1`) reached from here,
`env repair` cloning again a replica whose data directory is gone (interrupted by SIGTERM
mid-clone first), and destroy removing everything on every host.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import namespace_hosts
import pytest
import servers

pytestmark = pytest.mark.integration

NET, PREFIX = "10.231.6", "pgrrp"
RIG_DIR = Path("/var/lib/pgrig-rig-pgrrp")
DB1, DB2 = f"{NET}.11", f"{NET}.12"


def _no_pg18() -> str | None:
    if not list(servers.pg_build_cache().glob("18.*/bin/postgres")):
        return "PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)"
    return None


def pgrig(env: dict[str, str], *args: str, ok: bool = True, timeout: float = 300) -> str:
    done = subprocess.run(["pgrig", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    if ok:
        assert done.returncode == 0, f"pgrig {' '.join(args)}: {done.stderr}"
        return done.stdout
    assert done.returncode != 0, f"pgrig {' '.join(args)} should have failed: {done.stdout}"
    return done.stderr


def link(host: int, state: str) -> None:
    subprocess.run(["ip", "link", "set", f"{PREFIX}-v{host}", state], check=True)


def host_fs(host: int, *parts: str) -> Path:
    """A path of a rig host's private /var/lib/pgrig, seen from here."""
    return RIG_DIR / "hosts" / f"h{host}" / "fs" / "var-lib-pgrig" / Path(*parts)


def servers_in(host: int) -> list[str]:
    """The postgres processes running in a rig host's network namespace."""
    found = namespace_hosts.processes(f"{PREFIX}-h{host}")
    return [str(pid) for pid, comm in found if comm in ("postgres", "postmaster")]


@pytest.fixture(scope="module")
def lab() -> Iterator[dict[str, str]]:
    why = _no_pg18()
    if why:
        pytest.skip(why)
    with (
        namespace_hosts.up(NET, PREFIX, RIG_DIR, 2),
        namespace_hosts.home(
            "pgrig-test-replica-hosts-",
            str(servers.pg_build_cache()),
            PGRIG_SSH_CONNECT_TIMEOUT="3",
            PGRIG_RUN_OVERRUN_S="6",  # a run whose server stopped answering ends 6 s after -T
            PGRIG_PORT_RANGE="21950-21999",
        ) as e,
    ):
        key, known = str(RIG_DIR / "client" / "id_ed25519"), str(RIG_DIR / "known_hosts")
        for name, addr in (("db1", DB1), ("db2", DB2)):
            pgrig(e, "host", "add", name, "--ssh", f"root@{addr}", "--identity", key,
                  "--known-hosts", known)  # fmt: skip
        pgrig(e, "host", "provision", "db1", "--pg", "18")
        _provision_like_db1(Path(e["PGRIG_HOME"]), "db2", 2)
        yield e


def _provision_like_db1(home: Path, name: str, index: int) -> None:
    """Host `index` gets h1's provisioned files (hard links: same filesystem) and record."""
    h1, hn = RIG_DIR / "hosts" / "h1" / "fs", RIG_DIR / "hosts" / f"h{index}" / "fs"
    for part in ("opt/pgrig", "var-lib-pgrig/pg", "usr-local/bin"):
        (hn / part).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(h1 / part), str((hn / part).parent)], check=True)
    record = json.loads((home / "hosts" / "db1" / "provisioned.json").read_text())
    (home / "hosts" / name).mkdir(parents=True, exist_ok=True)
    (home / "hosts" / name / "provisioned.json").write_text(json.dumps({**record, "host": name}))


def _show(e: dict[str, str], name: str) -> dict:
    return json.loads(pgrig(e, "env", "show", name, "--json"))


def _wait_streaming(e: dict[str, str], name: str, sync: str | None = None) -> dict:
    for _ in range(60):
        shown = _show(e, name)
        reps = [m for m in shown.get("topology") or [] if m["role"] == "replica"]
        states = [m["replication"].get("state") for m in reps]
        syncs = [m["replication"].get("sync_state") for m in reps]
        if reps and states == ["streaming"] * len(reps) and (sync is None or sync in syncs):
            return shown
        time.sleep(0.5)
    raise AssertionError(f"replicas of {name} not streaming: {shown.get('topology')}")


def test_a_replica_on_another_host(lab: dict[str, str]) -> None:
    e = lab
    pgrig(e, "env", "create", "lab", "--pg", "18", "--on", "db1", "--replica-on", "db2",
          "--no-insights")  # fmt: skip
    shown = _wait_streaming(e, "lab")
    (rep,) = shown["replicas"]
    assert (rep["name"], rep["on"], rep["host"], rep["env"]) == ("r1", "db2", DB2, "lab.r1")
    text = pgrig(e, "env", "show", "lab")
    assert DB2 in text and "streaming" in text

    # db1 allows replication from db2's address only, as pgrig_replication
    hba = host_fs(1, "envs", "lab", "data", "pg_hba.conf").read_text().splitlines()
    repl = [ln.split()[:5] for ln in hba if ln.strip() and ln.split()[1:2] == ["replication"]]
    assert ["host", "replication", "pgrig_replication", f"{DB2}/32", "scram-sha-256"] in repl
    assert not [r for r in repl if r[0] == "host" and r[3] in ("all", "0.0.0.0/0")]

    # the replication password: in db2's passfile (0600) and nowhere else
    passfile = host_fs(2, "envs", "lab.r1", "replication-pgpass")
    assert passfile.stat().st_mode & 0o777 == 0o600
    password = passfile.read_text().strip().rsplit(":", 1)[1]
    for where in (host_fs(1), host_fs(2), Path(e["PGRIG_HOME"])):
        grep = subprocess.run(["grep", "-rlF", password, str(where)], capture_output=True,
                              text=True)  # fmt: skip
        assert grep.stdout.strip() in ("", str(passfile)), grep.stdout
    auto = host_fs(2, "envs", "lab.r1", "data", "postgresql.auto.conf").read_text()
    assert "passfile=" in auto and "password" not in auto.replace("passfile", "")
    for host in (1, 2):
        for pid in subprocess.run(["ip", "netns", "pids", f"{PREFIX}-h{host}"],
                                  capture_output=True, text=True).stdout.split():  # fmt: skip
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert password.encode() not in argv
    # from this machine (not db2) the replication role is refused
    import psycopg

    with pytest.raises(psycopg.OperationalError, match=r"pg_hba\.conf"):
        psycopg.connect(
            host=DB1, port=shown["port"], user="pgrig_replication", password=password,
            replication="true", dbname="replication", connect_timeout=5,
        ).close()  # fmt: skip

    pgrig(e, "env", "set", "lab", "--sync", "on")
    _wait_streaming(e, "lab", sync="quorum")  # ANY 1 (r1)
    assert _show(e, "lab")["sync"] == "on"

    pgrig(e, "db", "generate", "lab", "--scenario", "pgbench", "--scale", "1")
    split = json.loads(pgrig(e, "run", "lab", "-w", "pgbench:select-only", "--target", "split",
                             "-c", "4", "-j", "1", "-T", "2", "--json"))  # fmt: skip
    assert split["status"] == "ok", split.get("error")
    servers = {s["server"]: s["transactions"] for s in split["targets"]["servers"]}
    assert set(servers) == {"lab", "lab/r1"}  # clients spread at random: counts may be 0
    assert sum(servers.values()) > 1000
    far = json.loads(pgrig(e, "run", "lab", "-w", "pgbench:select-only", "--target", "replica",
                           "-c", "2", "-j", "1", "-T", "2", "--json"))  # fmt: skip
    assert far["status"] == "ok", far.get("error")
    (server,) = far["targets"]["servers"]
    assert server["server"] == "lab/r1" and server["transactions"] > 1000

    tpcb = json.loads(pgrig(e, "run", "lab", "-w", "pgbench:tpcb-like", "-c", "2", "-j", "1",
                            "-T", "3", "--json"))  # fmt: skip
    assert tpcb["status"] == "ok", tpcb.get("error")
    assert tpcb["topology"]["replicas"][0]["on"] == "db2"
    assert tpcb["topology"]["sync"] == "on"
    lag = tpcb["topology"]["lag"]["r1"]
    assert lag["samples"] >= 2 and lag["samples_not_streaming"] == 0
    assert {"replication", "os@db1", "os@db2"} <= set(tpcb["series_kinds"])
    shown = pgrig(e, "runs", "show", str(tpcb["id"]))
    assert "r1 (host db2, 10.231.6.12:" in shown and "replica" in shown

    pgrig(e, "env", "stop", "lab")  # the replica first, on its host
    assert servers_in(1) == [] and servers_in(2) == []
    pgrig(e, "env", "start", "lab")
    _wait_streaming(e, "lab", sync="quorum")


def test_the_replica_host_cut_off_mid_run(lab: dict[str, str]) -> None:
    """Synchronous replication and the replica's host gone: commits wait forever, so pgbench
    never ends by itself; the run fails after its duration plus the overrun grace, with what it
    measured, and warns that the host stopped answering."""
    e = lab

    duration = 10  # the cut lands 2 s into it
    argv = ["pgrig", "run", "lab", "-w", "pgbench:tpcb-like", "-c", "2", "-j", "1",
            "-T", str(duration), "--txlog", "full", "--json"]  # fmt: skip
    t0 = time.monotonic()
    run = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def cut_then_restore() -> None:
        # 2 s into the measured window: once pgbench (the run's child, here) is under way, and
        # only while the run lasts. Polling `pgrig runs list` for "running" instead took longer
        # than -T on a starved machine: the cut came after the run had ended "ok".
        import psutil

        while run.poll() is None and time.monotonic() - t0 < 60:
            with contextlib.suppress(psutil.Error):
                kids = psutil.Process(run.pid).children(recursive=True)
                if any(k.name() == "pgbench" for k in kids):
                    time.sleep(2.0)
                    link(2, "down")
                    return
            time.sleep(0.1)

    cutter = threading.Thread(target=cut_then_restore)
    cutter.start()
    try:
        stdout, _ = run.communicate(timeout=180)
    finally:
        cutter.join()
        link(2, "up")
        if run.poll() is None:
            run.kill()
    took = time.monotonic() - t0
    doc = json.loads(stdout)
    assert doc["status"] == "failed", doc
    assert "stopped answering" in doc["error"]
    assert took < duration + 60 + 45, took  # -T, the overrun grace, the prelude on a busy box
    assert (doc.get("transactions") or 0) > 0  # what was measured before the cut is kept
    codes = {w["code"] for w in doc.get("warnings") or []}
    assert "host_db2_silent" in codes, codes
    runs = json.loads(pgrig(e, "runs", "list", "--json"))
    assert "running" not in {r["status"] for r in runs}
    _wait_streaming(e, "lab")  # the replica catches up once its host is back


def _in_netns(host: int, comm: str) -> list[int]:
    return [pid for pid, name in namespace_hosts.processes(f"{PREFIX}-h{host}") if name == comm]


def _check(e: dict[str, str]) -> dict:
    return json.loads(pgrig(e, "env", "repair", "lab", "--check", "--json"))


def test_repair_clones_a_replica_whose_data_is_gone(lab: dict[str, str]) -> None:
    """db2's replica loses its data directory (its server still running from it); `env repair
    lab` on the control machine clones it again from db1: first interrupted by SIGTERM in the
    middle of pg_basebackup (nothing left broken on either host, the next command sees what
    it saw before), then to the end: a fresh slot, primary_conninfo rewritten, streaming."""
    e = lab
    replica_dir = host_fs(2, "envs", "lab.r1")
    servers.remove_under_a_running_server(replica_dir / "data")
    plan = _check(e)
    assert plan["replicas"]["r1"]["reclone"] and not plan["primary"]["needed"], plan

    repair = subprocess.Popen(["pgrig", "env", "repair", "lab"], env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (cloning := _in_netns(2, "pg_basebackup")):
            assert repair.poll() is None and time.monotonic() < deadline, repair.communicate()
            time.sleep(0.02)
        for pid in cloning:  # held in the middle of the clone, so the signal lands there
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        assert (replica_dir / "data.reclone").is_dir()
        repair.send_signal(signal.SIGTERM)
        _, err = repair.communicate(timeout=60)
    finally:
        if repair.poll() is None:
            repair.kill()
    assert repair.returncode == 143, err
    for _ in range(50):  # pg_basebackup and its WAL child are gone on db2, with the partial
        if not _in_netns(2, "pg_basebackup"):
            break
        time.sleep(0.1)
    assert not _in_netns(2, "pg_basebackup")
    assert not (replica_dir / "data.reclone").exists() and not (replica_dir / "data").exists()
    again = _check(e)  # the next command sees what the first saw: the replica to clone again
    assert again["replicas"]["r1"]["reclone"] and not again["replicas"]["r1"]["leftovers"]
    assert servers_in(2) == []

    out = subprocess.run(["pgrig", "env", "repair", "lab"], env=e, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "replica r1 on host db2: cloned again from the primary" in out.stderr
    _wait_streaming(e, "lab")
    auto = (replica_dir / "data" / "postgresql.auto.conf").read_text()
    assert "passfile=" in auto and "sslnegotiation" not in auto
    assert "primary_slot_name = 'pgrig_r1'" in auto
    assert not _check(e)["replicas"]["r1"]["needed"]
    assert "nothing to repair" in pgrig_err(e, "env", "repair", "lab")


def pgrig_err(e: dict[str, str], *args: str) -> str:
    done = subprocess.run(["pgrig", *args], env=e, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_destroy_removes_it_on_every_host(lab: dict[str, str]) -> None:
    e = lab
    pgrig(e, "env", "destroy", "lab", "--yes")
    assert not (Path(e["PGRIG_HOME"]) / "envs" / "lab").exists()
    assert not host_fs(1, "envs", "lab").exists()
    assert not host_fs(2, "envs", "lab.r1").exists()
    assert servers_in(1) == [] and servers_in(2) == []


def test_a_replica_host_unreachable_at_create(lab: dict[str, str]) -> None:
    e = lab
    link(2, "down")
    try:
        err = pgrig(e, "env", "create", "lab2", "--pg", "18", "--on", "db1", "--replica-on", "db2",
                    ok=False)  # fmt: skip
    finally:
        link(2, "up")
    assert "replica host db2:" in err and "unreachable" in err and "nothing was created" in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (Path(e["PGRIG_HOME"]) / "envs" / "lab2").exists()
    assert not host_fs(1, "envs", "lab2").exists()
    assert servers_in(1) == []


def test_replicas_on_the_primarys_own_host(lab: dict[str, str]) -> None:
    e = lab
    pgrig(e, "env", "create", "lab3", "--pg", "18", "--on", "db1", "--replicas", "1",
          "--no-insights")  # fmt: skip
    shown = _wait_streaming(e, "lab3")
    (rep,) = shown["replicas"]
    assert (rep["name"], rep["on"], rep["host"]) == ("r1", "db1", DB1)
    pgrig(e, "db", "generate", "lab3", "--scenario", "pgbench", "--scale", "1")
    doc = json.loads(pgrig(e, "run", "lab3", "-w", "pgbench:select-only", "--target", "replica",
                           "-c", "2", "-j", "1", "-T", "2", "--json"))  # fmt: skip
    assert doc["status"] == "ok", doc.get("error")
    (server,) = doc["targets"]["servers"]
    assert server["server"] == "lab3/r1" and server["transactions"] > 0
    pgrig(e, "env", "destroy", "lab3", "--yes")
    assert not host_fs(1, "envs", "lab3").exists()
    assert servers_in(1) == []
