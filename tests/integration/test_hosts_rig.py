"""Several hosts for real: namespaced hosts with their own sshd (scripts/test-hosts.sh), driven
through the `pgrig` command as a user would.

One rig per module (10.231.1.0/24, its own names and directory, apart from a user's rig and
from the run-time tests' 10.232.x) and one pgrig home. The commands of docs/hosts.md
run first, as printed (test_readme_several_hosts_works_as_printed: the rig's address and
directory put for the default ones); they provision db1 (h1) and c1 (h2), which the later tests
use. Covers: host keys (unknown, changed, accepted on first use), not root and no sudo,
unreachable, no python3, disk full (h4, h5: fault hosts docs/hosts.md never names), provisioning
(idempotent, --check), an environment on db1 used from here (show, set, psql, db generate, a
connection over the network with the passfile, destroy), TPC-C generated on db1 and run from c1
(the datasets recorded on the host), and the database host cut off mid-run (the run ends failed
in seconds, what it measured kept, nothing left running on the reachable hosts).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import namespace_hosts
import pytest

# docs/hosts.md's commands provision two hosts in one fixture: minutes on a busy 2-core machine
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]

ROOT = Path(__file__).resolve().parents[2]
NET, PREFIX = "10.231.1", "pgrigt"
RIG_DIR = Path("/var/lib/pgrig-rig-test")
FAULTS_AND_TMPFS = {
    "PGRIG_RIG_NO_PYTHON": "5",  # h5: no python3
    "PGRIG_RIG_SMALL_OPT": "4",  # h4: a 64 MiB /opt
    "PGRIG_RIG_TMPFS": "1",  # the hosts' files in memory: provisioned faster, gone at once
}
RIG_ENV = namespace_hosts.script_env(NET, PREFIX, RIG_DIR, FAULTS_AND_TMPFS)
T1, T2, T4, T5 = (f"{NET}.{10 + i}" for i in (1, 2, 4, 5))  # db1 and c1 of docs/hosts.md: h1, h2


@pytest.fixture(scope="module")
def rig() -> Iterator[Path]:
    with namespace_hosts.up(NET, PREFIX, RIG_DIR, 5, FAULTS_AND_TMPFS, timeout=120) as rig_dir:
        yield rig_dir


def _shared_pg_cache() -> str:
    return os.environ.get("PGRIG_PG_DIR") or "/var/lib/pgrig/pg"


@pytest.fixture(scope="module")
def env(rig: Path) -> Iterator[dict[str, str]]:
    with namespace_hosts.home(
        "pgrig-test-hosts-",
        _shared_pg_cache(),
        PGRIG_SSH_CONNECT_TIMEOUT="3",  # the partitioned host: no need to wait 10 s
        PGRIG_AGENT_SILENCE_S="3",  # a cut-off host's agents are given up after 3 s
    ) as e:
        yield e


def pgrig(env: dict[str, str], *args: str, ok: bool = True, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["pgrig", *args], env=env, capture_output=True, text=True, timeout=600, input=stdin
    )
    if ok:
        assert done.returncode == 0, f"pgrig {' '.join(args)}: {done.stderr}"
        return done.stdout
    assert done.returncode != 0, f"pgrig {' '.join(args)} should have failed: {done.stdout}"
    return done.stderr


def _add(env: dict[str, str], name: str, target: str, *extra: str, ok: bool = True) -> str:
    key = str(RIG_DIR / "client" / "id_ed25519")
    return pgrig(env, "host", "add", name, "--ssh", target, "--identity", key, *extra, ok=ok)


HOSTS_PAGE = ROOT / "docs" / "hosts.md"  # the user's page of several hosts


def readme_commands() -> list[list[str]]:
    """The commands of docs/hosts.md's first block, as a shell reads them (continued
    lines joined, comments dropped), with the rig's address and directory put for the default
    ones (the page's rig is the default one: 10.231.0, /var/lib/pgrig-rig)."""
    import shlex

    section = HOSTS_PAGE.read_text().split("\n## ")[0]  # the page before its sub-sections
    block = section.split("```sh\n")[1].split("```")[0].replace("\\\n", " ")
    out = []
    for line in block.splitlines():
        text = line.replace("10.231.0.", f"{NET}.").replace("/var/lib/pgrig-rig/", f"{RIG_DIR}/")
        argv = shlex.split(text, comments=True)
        if argv:
            out.append(argv)
    return out


@pytest.fixture(scope="module")
def readme(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every command of the page's block run in order (the last, `test-hosts.sh down`, is
    the rig's teardown): db1 and c1 provisioned, what each command printed."""
    from pgrig.provision.server import binaries

    try:
        binaries.find_bindir("18")
    except Exception:
        pytest.skip("PostgreSQL 18 is not in the build cache (run `pgrig pg install 18`)")
    commands = readme_commands()
    assert commands[0] == ["scripts/test-hosts.sh", "up", "3"]
    assert commands[-1] == ["scripts/test-hosts.sh", "down"]
    cwd = tmp_path_factory.mktemp("readme")
    done: list[tuple[list[str], subprocess.CompletedProcess[str], float]] = []
    began = time.monotonic()
    for argv in commands[:-1]:
        run = [str(ROOT / argv[0]), *argv[1:]] if argv[0].startswith("scripts/") else argv
        proc = subprocess.run(
            run, env={**env, **RIG_ENV}, cwd=cwd, capture_output=True, text=True, timeout=600,
            input="",
        )  # fmt: skip
        assert proc.returncode == 0, f"docs/hosts.md: {shlex_join(argv)}: {proc.stderr}"
        done.append((argv, proc, time.monotonic() - began))
        began = time.monotonic()
    # where the time goes (shown with -s): figures for the suite's budget, never asserted
    for argv, _proc, seconds in done:
        print(f"hosts.md {seconds:6.1f} s  {shlex_join(argv)}")
    return {"env": env, "done": done, "cwd": cwd}


def shlex_join(argv: list[str]) -> str:
    import shlex

    return shlex.join(argv)


@pytest.fixture(scope="module")
def provisioned(readme: dict[str, Any]) -> dict[str, str]:
    """db1 (h1) and c1 (h2) provisioned by docs/hosts.md's commands (PostgreSQL 18 from the
    cache)."""
    return dict(readme["env"])


def test_host_keys_unknown_changed_and_accepted_once(env: dict[str, str], tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    err = _add(env, "k1", f"root@{T2}", "--known-hosts", str(empty), ok=False)
    assert "unknown host key" in err and "--accept-new-host-key" in err
    assert len(err.strip().splitlines()) == 1

    wrong = tmp_path / "wrong_known_hosts"
    t1_key = next(ln for ln in (RIG_DIR / "known_hosts").read_text().splitlines() if T1 in ln)
    wrong.write_text(t1_key.replace(T1, T2) + "\n")  # t1's key for t2's address
    err = _add(
        env, "k2", f"root@{T2}", "--known-hosts", str(wrong), "--accept-new-host-key", ok=False
    )
    assert "HOST KEY CHANGED" in err

    _add(env, "k3", f"root@{T2}", "--known-hosts", str(empty), "--accept-new-host-key")
    assert T2 in empty.read_text()
    hosts = json.loads(pgrig(env, "host", "list", "--json"))["hosts"]
    assert [h["host_key"].startswith("SHA256:") for h in hosts if h["name"] == "k3"] == [True]
    pgrig(env, "host", "remove", "k3")


def test_not_root_without_sudo_and_unreachable(env: dict[str, str]) -> None:
    kh = str(RIG_DIR / "known_hosts")
    err = _add(env, "u1", f"rigu@{T4}", "--known-hosts", kh, ok=False)
    assert "not root and has no passwordless sudo" in err
    names = [h["name"] for h in json.loads(pgrig(env, "host", "list", "--json"))["hosts"]]
    assert "u1" not in names  # nothing recorded for a refused host

    _add(env, "t2", f"root@{T4}", "--known-hosts", kh)
    cut = ["ip", "link", "set", f"{PREFIX}-v4"]
    subprocess.run([*cut, "down"], check=True)  # a partition: t2's packets go nowhere
    try:
        err = pgrig(env, "host", "check", "--on", "t2", ok=False)
    finally:
        subprocess.run([*cut, "up"], check=True)
    assert f"host t2 (root@{T4}:22): unreachable" in err
    assert len(err.strip().splitlines()) == 1
    err = pgrig(env, "host", "check", "--on", "t2", ok=False)  # reachable, not provisioned
    assert "pgrig is not installed there (run `pgrig host provision t2`)" in err


def test_no_python3_and_disk_full(env: dict[str, str]) -> None:
    kh = str(RIG_DIR / "known_hosts")
    err = _add(env, "t3", f"root@{T5}", "--known-hosts", kh, ok=False)
    assert f"host t3 (root@{T5}:22): no python3 on the host" in err
    _add(env, "small", f"root@{T4}", "--known-hosts", kh)
    err = pgrig(env, "host", "provision", "small", "--pg", "18", ok=False)
    assert "host small: disk full (" in err and "MiB free" in err


def test_readme_several_hosts_works_as_printed(readme: dict[str, Any]) -> None:
    e = readme["env"]
    runs = json.loads(pgrig(e, "runs", "list", "--env", "lab", "--json"))
    by_workload = {r["workload"]: r for r in runs}
    assert set(by_workload) == {"pgbench:select-only", "tpcc"}, runs  # --emit ran nothing
    assert all(r["status"] == "ok" for r in runs), [(r["id"], r["error"]) for r in runs]
    select, tpcc = (
        json.loads(pgrig(e, "runs", "export", str(by_workload[w]["id"])))
        for w in ("pgbench:select-only", "tpcc")
    )
    assert [s["host"] for s in select["extra"]["load"]["split"]] == ["c1", "db1"]
    assert select["transactions"] > 0
    # TPC-C generated on db1 (recorded there), run from c1: the dataset seen from here
    assert tpcc["scenario"] == "tpcc" and tpcc["scale"] == 1 and tpcc["nopm"] > 0
    assert [s["host"] for s in tpcc["extra"]["load"]["split"]] == ["c1"]
    k8s = sorted(p.name for p in (readme["cwd"] / "k8s").iterdir())
    assert "cluster.yaml" in k8s and "pgbench-run.yaml" in k8s  # one load host: one Job
    assert "lab" not in pgrig(e, "env", "list", "--json")  # the page's commands destroyed it


def test_provisioning_is_idempotent(provisioned: dict[str, str]) -> None:
    again = json.loads(pgrig(provisioned, "host", "provision", "db1", "--pg", "18", "--json"))
    assert again["changed"] == [], again
    err = pgrig(provisioned, "host", "provision", "db1", "--pg", "9", ok=False)
    assert "PostgreSQL 9 cannot be installed on host db1" in err


def test_environment_on_a_host(provisioned: dict[str, str]) -> None:
    e = provisioned
    pgrig(e, "env", "create", "lab", "--pg", "18", "--on", "db1", "--set", "work_mem=16MB")
    home = Path(e["PGRIG_HOME"])
    passfile = home / "envs" / "lab" / "pgpass"
    assert passfile.stat().st_mode & 0o777 == 0o600
    password = passfile.read_text().strip().rsplit(":", 1)[1]
    record = (home / "envs" / "lab" / "env.json").read_text()
    assert password not in record

    shown = json.loads(pgrig(e, "env", "show", "lab", "--json"))
    assert (shown["on"], shown["status"], shown["host"]) == ("db1", "running", T1)
    assert shown["layers"]["environment"] == {"work_mem": "16MB"}

    out = pgrig(e, "env", "set", "lab", "work_mem=32MB")
    assert out == ""
    record = (home / "envs" / "lab" / "env.json").read_text()
    assert json.loads(record)["settings"] == {"work_mem": "32MB"}
    got = pgrig(e, "env", "psql", "lab", "--", "-Atc", "show work_mem", stdin="")
    assert got.strip() == "32MB"

    pgrig(e, "db", "generate", "lab", "--scale", "1")
    # From this machine over the network: scram-sha-256 with the passfile, none without it.
    import psycopg

    from pgrig.provision.state.environment import Environment

    os.environ["PGRIG_HOME"], saved = e["PGRIG_HOME"], os.environ.get("PGRIG_HOME")
    try:
        lab = Environment.load("lab")
        with psycopg.connect(lab.conninfo("pgrig")) as conn:
            n = conn.execute("select count(*) from pgbench_accounts").fetchone()
            addr = conn.execute("select host(inet_server_addr())").fetchone()
        assert n == (100000,) and addr == (T1,)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(
                f"host={T1} port={lab.port} user=postgres dbname=pgrig passfile=/dev/null "
                "connect_timeout=5"
            ).close()
    finally:
        if saved is not None:
            os.environ["PGRIG_HOME"] = saved

    # The password is nowhere on the host but in the server's catalog (as a verifier).
    host_home = RIG_DIR / "hosts" / "h1" / "fs" / "var-lib-pgrig"  # db1's /var/lib/pgrig
    assert (host_home / "envs" / "lab" / "env.json").exists()
    grep = subprocess.run(["grep", "-rl", password, str(host_home)], capture_output=True, text=True)
    assert grep.stdout == "", grep.stdout

    pgrig(e, "env", "stop", "lab")
    assert json.loads(pgrig(e, "env", "show", "lab", "--json"))["status"] == "stopped"
    pgrig(e, "env", "start", "lab")
    pgrig(e, "env", "destroy", "lab", "--yes")
    assert not (home / "envs" / "lab").exists()
    assert "lab" not in pgrig(e, "env", "list", "--json")


def test_host_check_on_a_host_is_recorded(provisioned: dict[str, str]) -> None:
    doc = json.loads(pgrig(provisioned, "host", "check", "--on", "db1", "--json"))
    assert any(c["name"] == "swappiness" for c in doc["checks"])
    saved = Path(provisioned["PGRIG_HOME"]) / "hosts" / "db1" / "host-check.json"
    assert json.loads(saved.read_text())["host"] == "db1"


def test_a_run_on_a_host_has_the_insights_of_a_local_one(provisioned: dict[str, str]) -> None:
    """pgrig made the server on db1 as it makes one here: a run of it, from here or from c1,
    has statements (pg_stat_statements created there), the server log's digest (read over SSH
    after the load), the wait profile at the local rate (10 Hz), and for the plans, which need
    auto_explain's rate driven in pgrig.conf on db1, a reason naming what is missing."""
    e = provisioned
    pgrig(e, "env", "create", "ins", "--pg", "18", "--on", "db1")
    try:
        pgrig(e, "db", "generate", "ins", "--scale", "1")
        pgrig(e, "env", "set", "ins", "log_min_duration_statement=0")  # the run's part: lines
        for load_from in ([], ["--load-from", "c1"]):
            doc = json.loads(pgrig(e, "run", "ins", "-w", "pgbench:select-only", "-c", "2",
                                   "-T", "3", "--json", *load_from))  # fmt: skip
            assert doc["status"] == "ok", doc["error"]
            shown = json.loads(pgrig(e, "runs", "show", str(doc["id"]), "--json"))
            statements = shown["statements"]
            assert statements["collected"], statements
            assert any("pgbench_accounts" in s["text"] for s in statements["top"]), statements
            digest = shown["log_digest"]
            assert digest["collected"] and digest["records"] > 0, digest
            assert shown["server_log"]["written_bytes"] > 0, shown["server_log"]
            waits = shown["waits"]
            assert waits["collected"] and "10 times a second" in waits["source"], waits
            assert shown["wait_sampling"]["hz"] == 10.0
            plans = shown["plans"]
            assert plans["collected"] or "db1" in plans["reason"], plans
            assert "external" not in json.dumps({k: shown[k] for k in ("plans", "log_digest")})
    finally:
        pgrig(e, "env", "destroy", "ins", "--yes")


def _pids_named(netns: str, *names: str) -> list[str]:
    return [f"{pid}:{comm}" for pid, comm in namespace_hosts.processes(netns) if comm in names]


def _left_on(netns: str, *names: str, wait_s: float = 10.0) -> list[str]:
    """Processes of these names still running in a host's namespace after wait_s at most."""
    deadline = time.monotonic() + wait_s
    while (left := _pids_named(netns, *names)) and time.monotonic() < deadline:
        time.sleep(0.3)
    return left


def _cut_when(
    started: Callable[[], object], veth: str, after_s: float
) -> tuple[threading.Thread, list[float]]:
    """Set veth down after_s seconds after started() first holds (in a thread); the instant
    (monotonic) it was cut goes into the list."""
    when: list[float] = []

    def go() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not started():
            time.sleep(0.1)
        time.sleep(after_s)
        subprocess.run(["ip", "link", "set", veth, "down"], check=True)
        when.append(time.monotonic())

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, when


def test_the_db_host_cut_off_mid_run(provisioned: dict[str, str]) -> None:
    """db1's link down while pgbench runs from c1, then from this machine: each run ends
    failed within seconds (not at -T + 120 s), names db1, keeps what it measured, and leaves
    nothing running on the hosts that can still be reached."""
    e = provisioned
    pgrig(e, "env", "create", "cut", "--pg", "18", "--on", "db1")
    pgrig(e, "db", "generate", "cut", "--scale", "1")
    veth, c1_ns = f"{PREFIX}-v1", f"{PREFIX}-h2"
    window = 60  # the planned run: far longer than the few seconds its end may take

    for load_from in (["--load-from", "c1"], []):
        run = subprocess.Popen(
            ["pgrig", "run", "cut", "-w", "pgbench:select-only", "-c", "4", "-j", "2",
             "-T", str(window), "--json", *load_from],
            env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        if load_from:
            started = functools.partial(_pids_named, c1_ns, "pgbench")
        else:
            started = functools.partial(_children_named, run.pid, "pgbench")
        # 5 s in: on a loaded CI machine pgbench may not have reported a measured second
        # 2 s after it started, and then there is honestly nothing to keep.
        cut, when = _cut_when(started, veth, after_s=5.0)
        try:
            out, err = run.communicate(timeout=window + 300)
            ended = time.monotonic()
            cut.join()
        finally:
            subprocess.run(["ip", "link", "set", veth, "up"], check=True)
            if run.poll() is None:
                run.kill()
        assert when, f"pgbench never started: {err}"
        doc = json.loads(out)
        assert run.returncode != 0 and doc["status"] == "failed", doc
        assert doc["error"].startswith("db host db1 lost ("), doc["error"]
        assert doc["transactions"] and doc["transactions"] > 0  # what was measured is kept
        assert ended - when[0] < window, "the run waited for its window: the cut went unnoticed"
        print(f"cut {'from c1' if load_from else 'from here'}: run ended {ended - when[0]:.1f} s "
              f"after the cut: {doc['error'][:300]}")  # fmt: skip
        assert _left_on(c1_ns, "pgbench", "python3") == []
        listed = json.loads(pgrig(e, "runs", "list", "--json", "--status", "running"))
        assert listed == []


def _children_named(parent: int, name: str) -> list[int]:
    """Processes named `name` whose parent is `parent`."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :]
        if comm == name and int(rest.split()[1]) == parent:
            found.append(int(d.name))
    return found
