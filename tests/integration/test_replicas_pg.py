"""Streaming replicas on this machine (provision/replicas.py): create, show, sync modes, lag
series in runs, a replica that stops mid-run, stop/start, repair and destroy (real PG18)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import servers
from servers import pgrig

from pgrig.provision.system import osuser

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def lab() -> Iterator[Path]:
    with servers.pg18_lab("pgrig-replicas-test-", "lab", "--replicas", "2", "--sync", "on") as home:
        yield home


def show() -> dict:
    return json.loads(pgrig("env", "show", "lab", "--json").stdout)


def test_topology_sync_and_lag_series(lab: Path) -> None:
    d = show()
    members = d["topology"]
    assert [m["role"] for m in members] == ["primary", "replica", "replica"]
    assert {m["status"] for m in members} == {"running"}
    for m in members[1:]:
        assert m["replication"]["state"] == "streaming"
        assert m["replication"]["sync_state"] == "quorum"  # ANY 1 (r1, r2)
        assert m["slot_active"] is True
    assert d["effective"]["synchronous_commit"] == {"value": "on", "layer": "topology"}
    assert d["effective"]["synchronous_standby_names"]["value"] == "ANY 1 (r1, r2)"

    rec = json.loads(pgrig("run", "lab", "-w", "pgbench:tpcb", "-c", "2", "-T", "3", "--json",
                           timeout=120).stdout)  # fmt: skip
    assert rec["status"] == "ok" and rec["tps"] > 0
    assert rec["topology"]["sync"] == "on"
    assert [r["name"] for r in rec["topology"]["replicas"]] == ["r1", "r2"]
    full = json.loads(pgrig("runs", "export", str(rec["id"]), "--format", "json").stdout)
    series = full["series"]["replication"]
    assert len(series["t"]) >= 3
    assert set(series["r1_connected"]) == {1}
    assert all(v is not None and v >= 0 for v in series["r2_lag_bytes"])
    # the record's maxima are those of the series it stored
    lags = [v for v in series["r1_lag_bytes"] if v is not None]
    assert rec["topology"]["lag"]["r1"]["max_lag_bytes"] >= max(lags)

    pgrig("env", "set", "lab", "--sync", "off")
    d = show()
    assert "synchronous_standby_names" not in d["layers"]["topology"]
    assert {m["replication"]["sync_state"] for m in d["topology"][1:]} == {"async"}


def test_replica_stopping_mid_run_is_a_warning_with_the_series(lab: Path) -> None:
    r2 = lab / "envs" / "lab" / "replicas" / "r2" / "data"
    bindir = json.loads(pgrig("env", "show", "lab", "--json").stdout)["paths"]["bindir"]

    def stop_r2() -> None:
        time.sleep(2.5)
        osuser.run_as_server([f"{bindir}/pg_ctl", "-D", str(r2), "-m", "immediate", "stop"])

    t = threading.Thread(target=stop_r2)
    t.start()
    out = pgrig("run", "lab", "-w", "pgbench:select-only", "-c", "2", "-T", "6", "--json",
                check=False, timeout=120)  # fmt: skip
    t.join()
    rec = json.loads(out.stdout)
    assert rec["status"] == "ok"  # the load on the primary was measured in full
    codes = {w["code"] for w in rec["warnings"]}
    assert "replica_r2_not_streaming" in codes
    assert rec["topology"]["lag"]["r2"]["samples_not_streaming"] >= 1
    assert rec["topology"]["lag"]["r1"]["samples_not_streaming"] == 0
    exported = json.loads(pgrig("runs", "export", str(rec["id"])).stdout)
    for name, lag in rec["topology"]["lag"].items():  # the same rows as the stored series
        flags = exported["series"]["replication"][f"{name}_connected"]
        assert lag["samples_not_streaming"] == flags.count(0) <= lag["samples"] == len(flags)
    states = {m["name"]: m["status"] for m in show()["topology"]}
    assert states["r2"] == "stopped"
    pgrig("env", "start", "lab")  # brings the stopped replica back
    deadline = time.time() + 20
    while time.time() < deadline:
        if show()["topology"][2]["replication"]["state"] == "streaming":
            break
        time.sleep(0.5)
    assert show()["topology"][2]["replication"]["state"] == "streaming"

    # read-only load on the replicas and on all three servers, transactions counted per server
    out = pgrig("run", "lab", "-w", "pgbench:tpcb", "--target", "replica", "-T", "2", check=False)
    assert out.returncode != 0 and "replicas are read-only" in out.stderr
    argv = ["run", "lab", "-w", "pgbench:select-only", "--target", "split", "-c", "6", "-j", "2"]
    rec = json.loads(pgrig(*argv, "-T", "2", "--json", timeout=120).stdout)
    assert rec["status"] == "ok" and rec["targets"]["role"] == "split"
    servers = {r["server"]: r for r in rec["targets"]["servers"]}
    assert set(servers) == {"lab", "lab/r1", "lab/r2"}
    committed = sum(r["transactions"] for r in servers.values())
    assert committed >= rec["transactions"]  # every pgbench transaction commits on one server


def test_stop_start_repair_destroy_every_member(lab: Path) -> None:
    pgrig("env", "stop", "lab")
    assert servers.postmasters_under(lab) == []
    pgrig("env", "start", "lab")
    assert {m["status"] for m in show()["topology"]} == {"running"}
    assert len(servers.postmasters_under(lab)) == 3

    r1 = lab / "envs" / "lab" / "replicas" / "r1" / "data"
    servers.remove_under_a_running_server(r1)
    out = pgrig("env", "repair", "lab")
    assert "replica r1 cloned again" in out.stderr
    assert show()["topology"][1]["status"] == "running"

    pgrig("env", "destroy", "lab", "--yes")
    assert not (lab / "envs" / "lab").exists()
    assert servers.postmasters_under(lab) == []
