"""The pooler on its own host, for real: PostgreSQL 18 on h1 (`env create --on h1`), pgbouncer on
h2 (`--pooler-on h2`), pgbench from h3 (`--load-from h3`), each a namespaced host with its own
sshd (scripts/test-hosts.sh), driven through the `pgrig` command as a user would.

The rig of this module lives on 10.231.5.0/24 (prefix "pgrpl"), apart from the other rig tests.
h1 is provisioned for real (Ansible, pgrig's wheel, PostgreSQL from the cache, pgbouncer). h2
gets the same installed files as hard links of h1's (what the same playbook would put there,
without a second minute of Ansible: test_hosts_rig.py covers provisioning), h3 only the
PostgreSQL build (a load host needs pgbench and python3). Covers: a run through pgbouncer on
h2 with load from h3 (real pgbench, per-host samplers db/pooler/load, the pooler's statistics
over TCP, the run's segment of pgbouncer's log copied from h2 into the run's artifacts), a
small study of direct against pgbouncer whose report shows each host's CPU and the RTT (checked
against the run documents), the pooler on the db host listening on its address, the pooler host
cut off (one line, nothing started), and env destroy leaving nothing running on any host.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import compare_surfaces as surfaces
import namespace_hosts
import pytest
import servers

pytestmark = pytest.mark.integration

NET, PREFIX = "10.231.5", "pgrpl"
RIG_DIR = Path("/var/lib/pgrig-rig-pgrpl")  # not /tmp: the hosts get a private /tmp


def pgrig(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["pgrig", *args], env=env, capture_output=True, text=True, timeout=300)
    if ok:
        assert done.returncode == 0, f"pgrig {' '.join(args)}: {done.stderr}"
    else:
        assert done.returncode != 0, f"pgrig {' '.join(args)} should have failed: {done.stdout}"
    return done


def _fs(host: str) -> Path:
    return RIG_DIR / "hosts" / host / "fs"


def _copy_install(src: str, dst: str) -> None:
    """dst gets src's installed files as hard links, and its OS user pgrig."""
    for d in ("opt", "usr-local", "var-lib-pgrig"):  # into the directories the host mounted
        subprocess.run(["cp", "-al", f"{_fs(src) / d}/.", f"{_fs(dst) / d}/"], check=True)
    shutil.rmtree(_fs(dst) / "var-lib-pgrig" / "envs", ignore_errors=True)
    for name in ("passwd", "group", "shadow"):
        lines = (_fs(src) / "etc" / name).read_text().splitlines()
        theirs = (_fs(dst) / "etc" / name).read_text().splitlines()
        known = {ln.split(":")[0] for ln in theirs}
        added = [ln for ln in lines if ln.split(":")[0] == "pgrig" and "pgrig" not in known]
        (_fs(dst) / "etc" / name).write_text("\n".join(theirs + added) + "\n")


@pytest.fixture(scope="module")
def env() -> Iterator[dict[str, str]]:
    cache = servers.pg_build_cache()  # not the home's: `make test` sets no PGRIG_PG_DIR
    builds = sorted(cache.glob("18.*/bin/postgres"))
    if not builds:
        pytest.skip("PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)")
    bindir, pg_dir = builds[-1].parent, str(cache)
    with (
        namespace_hosts.up(NET, PREFIX, RIG_DIR, 3),
        namespace_hosts.home(
            "pgrig-test-pgrpl-",
            pg_dir,
            PGRIG_SSH_CONNECT_TIMEOUT="3",  # the cut-off host: no need to wait 10 s
        ) as e,
    ):
        home = Path(e["PGRIG_HOME"])
        pgrig(e, "host", "import", str(RIG_DIR / "inventory.ini"))
        pgrig(e, "host", "provision", "h1", "--pg", "18")
        _copy_install("h1", "h2")
        record = json.loads((home / "hosts" / "h1" / "provisioned.json").read_text())
        (home / "hosts" / "h2").mkdir(parents=True, exist_ok=True)
        (home / "hosts" / "h2" / "provisioned.json").write_text(json.dumps(record))
        build = bindir.parent
        dest = _fs("h3") / "var-lib-pgrig" / "pg" / build.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cp", "-al", str(build), str(dest)], check=True)
        yield e


def processes(host: str) -> list[str]:
    """The names of the programs running in a host's network namespace."""
    return [comm for _pid, comm in namespace_hosts.processes(f"{PREFIX}-{host}")]


def run(env: dict[str, str], *args: str, ok: bool = True) -> Any:
    """The run's whole archived document (`runs export`: extra and series), or its stderr."""
    done = pgrig(env, "run", "lab", "-w", "pgbench:select-only", "--json", *args, ok=ok)
    if not ok:
        return done.stderr
    run_id = str(json.loads(done.stdout)["id"])
    return json.loads(pgrig(env, "runs", "export", run_id).stdout)


@contextlib.contextmanager
def bad_logins(port: int) -> Iterator[None]:
    """Logins to h2's pgbouncer with a wrong password, every 0.2 s while the block runs."""
    import psycopg

    stop = threading.Event()

    def knock() -> None:
        while not stop.is_set():
            with contextlib.suppress(psycopg.Error):
                psycopg.connect(host=f"{NET}.12", port=port, user="pgrig_pool", password="no",
                                dbname="pgrig", connect_timeout=3).close()  # fmt: skip
            stop.wait(0.2)

    knocker = threading.Thread(target=knock, daemon=True)
    knocker.start()
    try:
        yield
    finally:
        stop.set()
        knocker.join(10)


def _check_pooler_log(env: dict[str, str], doc: Any, host: str) -> None:
    """The run's segment of pgbouncer's log, copied from its host: a contiguous piece of the
    log there, holding the refused logins of the run, and counted as extra.pooler.log says."""
    log = doc["extra"]["pooler"]["log"]
    assert log["collected"] and log["where"] == host and not log["truncated"], log
    kept = (Path(env["PGRIG_HOME"]) / "artifacts" / doc["artifacts"]["pooler.log"]).read_text()
    there = _fs(host) / "var-lib-pgrig" / "envs" / "lab" / "pooler" / "pgbouncer-0.log"
    assert kept and kept in there.read_text(errors="replace")
    assert log["written_bytes"] == log["kept_bytes"] == len(kept.encode())
    assert sum(log["records"].values()) == len(kept.splitlines()) and not log["dropped"]
    assert "password authentication failed" in kept, kept[-500:]


def test_pgbouncer_on_its_own_host_with_load_from_a_third(env: dict[str, str]) -> None:
    made = pgrig(env, "env", "create", "lab", "--pg", "18", "--on", "h1", "--pooler-on", "h2")
    assert f"pgbouncer on host h2: {NET}.12:" in made.stderr
    assert "pgbouncer" in processes("h2") and "pgbouncer" not in processes("h1")
    pgrig(env, "db", "generate", "lab", "--scenario", "pgbench", "--scale", "1")
    shown = json.loads(pgrig(env, "env", "pooler", "lab", "show", "--json").stdout)
    assert shown["on"] == "h2" and shown["status"] == "running"
    assert shown["target"].startswith(f"postgresql://pgrig_pool@{NET}.12:")
    passfile = Path(env["PGRIG_HOME"]) / "envs" / "lab" / "pooler.pgpass"
    assert passfile.stat().st_mode & 0o777 == 0o600  # the passwords stay here
    assert not list((_fs("h2") / "var-lib-pgrig" / "envs" / "lab").glob("*pgpass*"))

    with bad_logins(int(shown["config"]["port"])):  # pgbouncer logs them: its log has lines
        doc = run(env, "--via", "pooler", "--load-from", "h3", "-c", "4", "-j", "1", "-T", "3")
    assert doc["status"] == "ok", doc.get("error")
    extra = doc["extra"]
    _check_pooler_log(env, doc, "h2")
    assert doc["tps"] > 0 and extra["connection"]["via"] == "pgbouncer"
    assert extra["host_roles"] == {"h3": ["load"], "h1": ["db"], "h2": ["pooler"]}
    for host in ("h1", "h2", "h3"):
        assert doc["series"][f"os@{host}"]["t"], host  # a sampler on every host of the run
    assert any(v for v in doc["series"]["os@h2"].get("proc_pooler_cpu", []) if v), "pgbouncer"
    (path,) = extra["network"]["paths"]
    assert path["from"] == "h3" and path["to"].startswith(f"{NET}.12:")
    assert path["kind"] == "network" and path["rtt_p50_ms"] is not None
    totals = extra["pooler"]["totals"]  # SHOW STATS over TCP from here
    assert totals, extra["pooler"]
    assert extra["pooler"]["on"] == "h2" and extra["pooler"]["target"].startswith(
        f"postgresql://pgrig_pool@{NET}.12:"
    )
    hosts = pgrig(env, "runs", "show", str(doc["id"])).stdout
    assert "pooler" in hosts and "h2" in hosts


STUDY = """
[study]
name = "rig-hosts"
repeats = 1

[environment]
name = "lab"
create = false

[dataset]
scenario = "pgbench"
scale = 1

[run]
workload = "pgbench:select-only"
clients = 2
threads = 1
duration = "2s"
warmup = "1s"
load_from = ["h3"]

[sweep]
via = ["direct", "pgbouncer"]
x = "via"
"""


def test_the_study_report_shows_each_hosts_cpu_and_rtt(env: dict[str, str], tmp_path: Path) -> None:
    """Seed 003's study in little (2 points of 2 s): the report's hosts section has every host
    of each point with its CPU and the RTT from h3, the figures the run documents give."""
    from study_hosts_expected import expected_rows

    study = tmp_path / "rig-hosts.toml"
    study.write_text(STUDY)
    pgrig(env, "study", "run", str(study))
    shown = json.loads(pgrig(env, "study", "show", "rig-hosts", "--json").stdout)
    hosts = {p["label"]: p for p in shown["hosts"]}
    assert set(hosts) == {"via=direct", "via=pgbouncer"}
    want: list[list[str]] = []
    for point in shown["points"]:
        docs = [json.loads(pgrig(env, "runs", "export", str(i)).stdout) for i in point["run_ids"]]
        assert [d["status"] for d in docs] == ["ok"], [d.get("error") for d in docs]
        roles = {h["host"]: h["role"] for h in hosts[point["label"]]["hosts"]}
        pooled = point["label"] == "via=pgbouncer"
        assert roles == {"h3": "load", "h1": "db", **({"h2": "pooler"} if pooled else {})}
        (load,) = [h for h in hosts[point["label"]]["hosts"] if h["host"] == "h3"]
        (path,) = load["paths"]
        assert path["to_host"] == ("h2" if pooled else "h1") and path["kind"] == "network"
        assert path["rtt_p50_ms"] is not None and path["samples"] > 0
        want += expected_rows(point["label"], docs)
    pgrig(env, "study", "report", "rig-hosts", "--format", "md", "--out", str(tmp_path / "report"))
    (md,) = sorted(tmp_path.joinpath("report").glob("*.md"))
    assert surfaces.study_hosts_from_markdown(md.read_text()) == want


def test_pooler_host_cut_off_is_one_line(env: dict[str, str]) -> None:
    subprocess.run(["ip", "link", "set", f"{PREFIX}-v2", "down"], check=True)
    try:
        err = run(env, "--via", "pooler", "--load-from", "h3", "-c", "2", "-T", "2", ok=False)
    finally:
        subprocess.run(["ip", "link", "set", f"{PREFIX}-v2", "up"], check=True)
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert "h2" in lines[-1] and "unreachable" in lines[-1], err
    assert "pgbench" not in processes("h3")


def test_pooler_on_the_db_host_listens_on_its_address(env: dict[str, str]) -> None:
    pgrig(env, "env", "pooler", "lab", "remove")
    assert "pgbouncer" not in processes("h2")
    assert not (_fs("h2") / "var-lib-pgrig" / "envs" / "lab").exists()
    pgrig(env, "env", "pooler", "lab", "add", "pgbouncer", "--pool-size", "4")
    assert "pgbouncer" in processes("h1")
    doc = run(env, "--via", "pooler", "--load-from", "h3", "-c", "2", "-j", "1", "-T", "2")
    assert doc["status"] == "ok", doc.get("error")
    assert doc["extra"]["host_roles"]["h1"] == ["db", "pooler"]
    log = doc["extra"]["pooler"]["log"]  # read on h1 this time
    assert log["collected"] and log["where"] == "h1", log
    assert doc["extra"]["network"]["paths"][0]["to"].startswith(f"{NET}.11:")


def test_destroy_leaves_nothing_on_any_host(env: dict[str, str]) -> None:
    pgrig(env, "env", "pooler", "lab", "remove")
    pgrig(env, "env", "pooler", "lab", "add", "--on", "h2")
    assert "pgbouncer" in processes("h2")
    pgrig(env, "env", "destroy", "lab", "--yes")
    for host in ("h1", "h2", "h3"):
        left = [p for p in processes(host) if p in ("pgbouncer", "postgres", "pgbench", "python3")]
        assert not left, (host, left)
    assert not (_fs("h2") / "var-lib-pgrig" / "envs" / "lab").exists()
    assert not (Path(env["PGRIG_HOME"]) / "envs" / "lab").exists()
