"""Load from several hosts on the namespace rig (scripts/test-hosts.sh), with real sshd, real
pgbench and a real PostgreSQL 18 reached over the rig's bridge.

The rig of this module lives on 10.232.1.0/24 (prefix "hrt"), apart from the default rig. Its
hosts get the PostgreSQL build copied into their private /var/lib/pgrig (what
`pgrig host provision` puts there, without the Ansible run's time: tests/integration of hosts
covers provisioning). The server runs on the control machine (10.232.1.1), an external
environment: db on one host, load from two others. Faults: a load host cut off
(`ip link set VETH down`), the postmaster killed, an SSH session killed; each run must end
failed with what it measured kept, and nothing of it left running on any host.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import namespace_hosts
import pytest
import servers

NET = "10.232.1"
PREFIX = "hrt"
PORTS = range(14900, 14950)


@pytest.fixture(scope="module")
def rig() -> Iterator[Path]:
    # not under /tmp: the hosts get a private /tmp, which would hide the rig's files
    rig_dir = Path(tempfile.mkdtemp(prefix="pgrig-rig-hrt-", dir="/var/lib"))
    try:
        with namespace_hosts.up(NET, PREFIX, rig_dir, 3, {"PGRIG_RIG_TMPFS": "1"}) as hosts:
            yield hosts
    finally:
        shutil.rmtree(rig_dir, ignore_errors=True)


class NetServer(servers.Server):
    """A throwaway server that also listens on the rig's bridge and trusts the rig's hosts."""

    def init(self) -> None:
        super().init()
        with open(self.data / "pg_hba.conf", "a") as f:
            f.write(f"host all all {NET}.0/24 trust\n")


@pytest.fixture(scope="module")
def lab(rig: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pytest.MonkeyPatch.context() as mp:
        cache = servers.pg_build_cache()  # not the home's: `make test` sets no PGRIG_PG_DIR
        builds = sorted(cache.glob("18.*/bin/pgbench"))
        if not builds:
            pytest.skip("no PostgreSQL 18 in pgrig's cache (`pgrig pg install 18`)")
        build = builds[-1].parents[1]
        mp.setenv("PGRIG_PG_DIR", str(cache))
        mp.setenv("PGRIG_AGENT_SILENCE_S", "3")  # a cut-off host's agent gives up fast
        for host in ("h2", "h3"):  # what `pgrig host provision` would have unpacked
            dest = rig / "hosts" / host / "fs" / "var-lib-pgrig" / "pg" / build.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(build, dest, symlinks=True, dirs_exist_ok=True)
        make = lambda bindir: NetServer(  # noqa: E731
            bindir, PORTS, "hrt-pg-",
            settings={"listen_addresses": f"127.0.0.1,{NET}.1", "max_connections": 100},
        )  # fmt: skip
        with servers.throwaway(build / "bin", make) as server, servers.scratch_home("hrt-home-"):
            servers.pgrig("host", "import", str(rig / "inventory.ini"))
            dsn = f"postgresql://postgres@{NET}.1:{server.port}/postgres"
            servers.pgrig("env", "add", "db", "--dsn", dsn)
            servers.pgrig("db", "generate", "db", "--scenario", "pgbench", "--scale", "1")
            mp.setattr(NetServer, "current", server, raising=False)
            yield "db"


def run_json(*args: str, check: bool = False) -> dict:
    proc = servers.pgrig("run", "db", "-w", "pgbench:select-only", "--json", *args, check=check)
    assert proc.stdout.strip(), proc.stderr
    doc = json.loads(proc.stdout)
    assert "status" in doc, doc  # a run, not a refusal
    return doc


def record(run_id: int) -> Any:
    from pgrig.cli import common

    return common.open_archive(None).get_run(run_id)


def pgbench_left(*hosts: str, wait_s: float = 8.0) -> list[str]:
    """pgbench processes still running in the hosts' namespaces after wait_s at most."""
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for host in hosts:
            for pid, comm in namespace_hosts.processes(f"{PREFIX}-{host}"):
                if comm in ("pgbench", "sysbench", "python3"):
                    left.append(f"{host}:{pid}:{comm}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.3)


def once_running(host: str, action: Any, after_s: float = 1.5) -> threading.Thread:
    """Do action after_s seconds after pgbench started on host (in a thread)."""

    def wait_then_act() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(c == "pgbench" for c in _comms(host)):
                time.sleep(after_s)
                action()
                return
            time.sleep(0.1)

    t = threading.Thread(target=wait_then_act, daemon=True)
    t.start()
    return t


def _comms(host: str) -> list[str]:
    return [comm for _pid, comm in namespace_hosts.processes(f"{PREFIX}-{host}")]


def test_load_from_two_hosts_merges_exactly(lab: str) -> None:
    doc = run_json("-c", "4", "-j", "2", "-T", "3", "--load-from", "h2", "--load-from", "h3")
    assert doc["status"] == "ok", doc["error"]
    rec = record(doc["id"])
    load = rec.extra["load"]
    assert [s["clients"] for s in load["split"]] == [2, 2]
    gens = {h: v["generator"] for h, v in load["hosts"].items()}
    assert set(gens) == {"h2", "h3"} and all(g["transactions"] > 0 for g in gens.values())
    # each host's own pgbench summary counts exactly its lines (whole run, lead-in included)
    stdout = (Path(os.environ["PGRIG_HOME"]) / "artifacts" / rec.artifacts["pgbench.stdout"]
              ).read_text()  # fmt: skip
    processed = [int(line.split(":")[1]) for line in stdout.splitlines()
                 if line.startswith("number of transactions actually processed")]  # fmt: skip
    assert sorted(processed) == sorted(g["transactions"] for g in gens.values())
    # the merged per-second series sums to the window's transactions
    series = rec.series["pgbench"]
    inside = [tps for t, tps in zip(series["t"], series["tps"], strict=True) if 0 <= t < 3]
    assert sum(inside) == pytest.approx(doc["transactions"], rel=1e-9)
    assert load["start_skew_ms"] >= 0 and load["first_tx_skew_ms"] is not None
    paths_ = rec.extra["network"]["paths"]
    assert {p["from"] for p in paths_} == {"h2", "h3"}
    assert all(p["kind"] == "network" and p["rtt_p50_ms"] > 0 for p in paths_)
    assert {"os@h2", "os@h3"} <= set(rec.series)
    assert pgbench_left("h2", "h3") == []
    # the harness cost per load host (issue 31): each agent's own CPU over the load, recorded
    # and shown by `runs show` (text and --json) as `run --json` said it
    agents = rec.extra["harness_cost"]["load_hosts"]
    assert set(agents) == {"h2", "h3"}
    # (a measured figure for each, never None; an agent forwarding a few seconds of a small
    # load can take under one clock tick, 0.0)
    assert all(isinstance(a["cpu_s"], float | int) and a["cpu_s"] >= 0 and a["cpus"] >= 1
               for a in agents.values()), agents  # fmt: skip
    shown = json.loads(servers.pgrig("runs", "show", str(doc["id"]), "--json").stdout)["harness"]
    assert shown == doc["harness"] and shown["recorded"]
    assert shown["load_hosts"] == {h: a["cpu_s"] for h, a in agents.items()}
    assert shown["load_hosts_cpu_s"] == pytest.approx(sum(a["cpu_s"] for a in agents.values()))
    text = " ".join(servers.pgrig("runs", "show", str(doc["id"])).stdout.split())
    assert re.search(r"load hosts' agents [\d.]+ CPU-s \(h2 [\d.]+, h3 [\d.]+\)", text), text
    _json_and_text_agree(doc["id"], rec)


def _json_and_text_agree(run_id: int, rec: Any) -> None:
    """`runs show --json`, `run --json` and the text of `runs show` say the same of the load
    hosts (views/run_hosts.py): split, start skew, network, the hosts table, what the
    percentiles rest on, where the server was."""
    shown = json.loads(servers.pgrig("runs", "show", str(run_id), "--json").stdout)
    text = servers.pgrig("runs", "show", str(run_id)).stdout
    load = rec.extra["load"]
    assert shown["load_from"] == [
        {"host": s["host"], "clients": s["clients"], "threads": s["threads"], "rate": s["rate"]}
        for s in load["split"]
    ]
    assert shown["start_skew_ms"] == load["start_skew_ms"]
    assert shown["first_tx_skew_ms"] == load["first_tx_skew_ms"]
    assert shown["network_paths"] == rec.extra["network"]["paths"]
    rows = {h["host"]: h for h in shown["hosts"]}
    assert {"h2", "h3"} <= set(rows)
    for host in ("h2", "h3"):
        path = next(p for p in rec.extra["network"]["paths"] if p["from"] == host)
        row = rows[host]
        assert row["roles"] == ["load"] and row["path"] == "network"
        assert row["transactions"] == load["hosts"][host]["generator"]["transactions"]
        assert (row["rtt_p50_ms"], row["rtt_p99_ms"]) == (path["rtt_p50_ms"], path["rtt_p99_ms"])
        assert row["clock_offset_ms"] == load["hosts"][host]["clock"]["offset_ms"]
        # the text's hosts table has the same row: host, role, the host's own transactions
        line = next(ln for ln in text.splitlines() if ln.split()[:2] == [host, "load"])
        assert f"{row['transactions']:,}" in line
        assert f"{row['rtt_p50_ms']:.3f} / {row['rtt_p99_ms']:.3f}" in line
    about = shown["summary"]["about"]
    assert about["load from"] == "h2 (2 clients, 1 threads), h3 (2 clients, 1 threads)"
    for label in ("load from", "start skew", "environment"):  # lines the text prints whole
        assert f"{label} " in text and about[label] in text, label
    # the server is an external one here (env add --dsn): said so, managed false
    assert shown["environment"]["kind"] == "external" and shown["managed"] is False
    # the percentiles rest on every transaction of the merged logs, not "an older run"
    basis = shown["latency_basis"]
    assert basis["samples"] == basis["population"] == rec.transactions
    assert "merged" in shown["summary"]["results"]["percentiles rest on"]
    assert "not recorded" not in text


def facts(shown: dict[str, Any]) -> set[str]:
    """The facts `runs show --json` gives of a run: its documents and their fields (two
    levels), and the lines of its summary's sections. Deeper keys are the run's own data
    (tables vacuumed, wait types seen), not facts a runner records or not."""
    out = set()
    for key, value in shown.items():
        out.add(key)
        if isinstance(value, dict):
            out |= {f"{key}.{k}" for k in value}
    for section, lines in (shown.get("summary") or {}).items():
        if isinstance(lines, dict):
            out |= {f"summary.{section}.{label}" for label in lines}
    return out


def test_load_from_has_every_fact_of_a_local_run(lab: str) -> None:
    """One scaffold around every runner (load/core/run_scaffold.py): a run whose load comes
    from other hosts has what a local run of the same environment has, the 10 Hz wait
    profile first (it had none: the multi-host runner never opened the wait sampler)."""
    local = run_json("-c", "4", "-j", "2", "-T", "3", "--txlog", "full")
    hosts = run_json("-c", "4", "-j", "2", "-T", "3", "--load-from", "h2", "--load-from", "h3")
    assert local["status"] == hosts["status"] == "ok", (local["error"], hosts["error"])
    shown = {
        name: json.loads(servers.pgrig("runs", "show", str(doc["id"]), "--json").stdout)
        for name, doc in (("local", local), ("hosts", hosts))
    }
    assert facts(shown["local"]) - facts(shown["hosts"]) == set()
    # the wait profile at the local rate, from as many snapshots
    sampling = shown["hosts"]["wait_sampling"]
    assert sampling["hz"] == shown["local"]["wait_sampling"]["hz"] == 10.0
    assert sampling["sampler"]["snapshots"] >= 20 and sampling["sampler"]["error"] is None
    waits = shown["hosts"]["waits"]
    assert waits["collected"] and "10 times a second" in waits["source"], waits
    assert waits["samples"] >= 20 and waits["events"], waits
    # what only load hosts have: the split and the start skew
    assert {"summary.about.load from", "summary.about.start skew"} <= facts(shown["hosts"])


def test_load_from_with_a_sampled_or_no_log_is_refused_before_the_run(lab: str) -> None:
    from pgrig.cli import common

    before = common.open_archive(None).count_runs()
    for mode in ("sampled", "off"):
        proc = servers.pgrig("run", "db", "-w", "pgbench:select-only", "-T", "2", "--txlog",
                             mode, "--load-from", "h2", check=False)  # fmt: skip
        assert proc.returncode == 2 and f"--txlog {mode}: --load-from merges" in proc.stderr
    assert common.open_archive(None).count_runs() == before  # no run row


ROOT = Path(__file__).resolve().parents[2]
LEDGER = ROOT / "examples" / "sysbench" / "ledger" / "ledger.lua"


def load_hosts_command() -> list[str]:
    """The command of docs/sysbench.md's "On load hosts" block, as a shell reads it."""
    section = (ROOT / "docs" / "sysbench.md").read_text().split("## On load hosts", 1)[1]
    block = section.split("```sh\n")[1].split("```")[0].replace("\\\n", " ")
    (argv,) = [shlex.split(line) for line in block.splitlines() if line.strip()]
    return argv


def test_a_multi_file_sysbench_script_from_two_hosts(lab: str) -> None:
    """docs/sysbench.md's command: examples/sysbench/ledger (ledger.lua requiring three modules
    beside it) run by the sysbench of two load hosts (the rig shares /usr: Debian's sysbench),
    its files shipped to each agent, the figures merged."""
    from pgrig import format as fmt
    from pgrig.views import run_hosts

    if shutil.which("sysbench") is None:
        pytest.skip("sysbench is not installed (scripts/setup.sh installs it)")
    servers.pgrig("db", "generate", lab, "--db", "ledger", "--scenario", "sysbench", "--script",
                  str(LEDGER.relative_to(ROOT)), "--define", "scale=1", "--define", "tables=2",
                  cwd=ROOT)  # fmt: skip
    argv = load_hosts_command()
    assert argv[:3] == ["pgrig", "run", "lab"] and argv.count("--load-from") == 2
    args = [lab if a == "lab" else a for a in argv[1:]]
    proc = servers.pgrig(*args, "--json", cwd=ROOT)
    script = LEDGER
    doc = json.loads(proc.stdout)
    assert doc["status"] == "ok", doc["error"]
    rec = record(doc["id"])
    assert rec.scenario == "sysbench" and rec.extra["dataset"]["script"] == str(script)
    # each host ran its own sysbench on the shipped copy, with the dataset's options
    lines = rec.command.splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["h2", "h3"]
    assert all(" @WORK@/lua/ledger.lua " in ln and ln.endswith("--scale=1 --tables=2 run")
               for ln in lines)  # fmt: skip
    assert all("--threads=2 " in ln for ln in lines)
    hosts = rec.extra["load"]["hosts"]
    assert all(hosts[h]["exit_code"] == 0 and hosts[h]["generator"]["transactions"] > 0
               for h in ("h2", "h3"))  # fmt: skip
    # the run's transactions are the sum of each host's own, over the window
    stdout = (Path(os.environ["PGRIG_HOME"]) / "artifacts" / rec.artifacts["sysbench.stdout"]
              ).read_text()  # fmt: skip
    per_host = dict(re.findall(r"^--- (h\d)\n(.*?)(?=^--- h\d$|\Z)", stdout, re.M | re.S))
    assert list(per_host) == ["h2", "h3"]
    finals = [int(re.findall(r"transactions:\s+(\d+)", part)[-1]) for part in per_host.values()]
    assert sum(finals) == doc["transactions"] > 0
    assert rec.extra["latency_basis"]["samples"] > 0
    assert set(rec.extra["latency_basis"]["check"]["hosts"]) == {"h2", "h3"}
    assert rec.series["pgbench"]["tps"] and {"os@h2", "os@h3"} <= set(rec.series)
    table = run_hosts.hosts_table(rec)  # runs show's hosts table: each host's transactions
    assert table is not None
    rows = {row[0].text: [cell.text for cell in row] for row in table.rows}
    assert {"h2", "h3"} <= set(rows)
    assert all(
        rows[h][5] == fmt.number(hosts[h]["generator"]["transactions"]) for h in ("h2", "h3")
    )
    assert pgbench_left("h2", "h3") == []


def test_emit_k8s_writes_the_experiment_instead_of_running_it(lab: str, tmp_path: Path) -> None:
    import yaml

    args = ["-c", "4", "-j", "2", "-T", "5", "--load-from", "h2", "--load-from", "h3"]
    proc = servers.pgrig("run", "db", "-w", "pgbench:select-only", *args,
                         "--emit", "k8s", str(tmp_path / "k8s"))  # fmt: skip
    names = sorted(Path(line).name for line in proc.stdout.split())
    assert names == ["cluster.yaml", "kustomization.yaml", "pgbench-init.yaml",
                     "pgbench-run-1.yaml", "pgbench-run-2.yaml"]  # fmt: skip
    job = yaml.safe_load((tmp_path / "k8s" / "pgbench-run-2.yaml").read_text())
    assert job["metadata"]["annotations"]["pgrig.io/load-host"] == "h3"
    runs = json.loads(servers.pgrig("runs", "list", "--json").stdout)
    assert all(r.get("status") != "running" for r in runs)


def test_a_load_host_cut_off_mid_run(lab: str, rig: Path) -> None:
    cut = once_running("h3", lambda: subprocess.run(["ip", "link", "set", f"{PREFIX}-v3", "down"]))
    try:
        doc = run_json("-c", "4", "-j", "2", "-T", "20", "--load-from", "h2", "--load-from", "h3")
    finally:
        cut.join()
        subprocess.run(["ip", "link", "set", f"{PREFIX}-v3", "up"])
    assert doc["status"] == "failed"
    assert "load host h3 lost" in doc["error"], doc["error"]
    assert doc["transactions"] and doc["transactions"] > 0  # what was measured is kept
    assert pgbench_left("h2") == []
    assert pgbench_left("h3", wait_s=15) == []  # its agent gave up on the silent control machine
    listed = json.loads(servers.pgrig("runs", "list", "--json", "--status", "running").stdout)
    assert listed == []


def test_an_ssh_session_killed_mid_run(lab: str, rig: Path) -> None:
    sshd = int((rig / "hosts" / "h3" / "sshd.pid").read_text())

    def kill_sessions() -> None:
        children = subprocess.run(["pgrep", "-P", str(sshd)], capture_output=True, text=True)
        for pid in children.stdout.split():
            os.kill(int(pid), signal.SIGKILL)

    kill = once_running("h3", kill_sessions)
    try:
        doc = run_json("-c", "4", "-j", "2", "-T", "20", "--load-from", "h2", "--load-from", "h3")
    finally:
        kill.join()
    assert doc["status"] == "failed"
    assert "load host h3 lost" in doc["error"] and "connection lost" in doc["error"]
    assert pgbench_left("h2", "h3") == []


def test_the_db_postmaster_killed_mid_run(lab: str) -> None:
    server = NetServer.current
    pid = int(server.pid_file.read_text().split()[0])
    kill = once_running("h2", lambda: os.kill(pid, signal.SIGKILL))
    try:
        doc = run_json("-c", "4", "-j", "2", "-T", "20", "--load-from", "h2", "--load-from", "h3")
    finally:
        kill.join()
    assert doc["status"] == "failed"
    assert "load host h2" in doc["error"] and "load host h3" in doc["error"], doc["error"]
    assert pgbench_left("h2", "h3") == []
