"""A pooler for clients on other hosts (no servers, no hosts): what it listens on, where its
server is, how clients and the sampler reach it, which hosts a run samples, and the refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pgrig.errors import PgrigError
from pgrig.provision import pooler
from pgrig.provision.pooler import auth, remote
from pgrig.provision.state.environment import Environment


def remote_env(**cfg: Any) -> Environment:
    """The control machine's record of `env create lab --on h1 [--pooler-on h2]`."""
    env = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433, major=18)
    placed = {"port": 6432, "listen": "10.9.0.12", "on": "h2", "auth_from": "control", **cfg}
    env.pooler = pooler.PoolerConfig(**placed).as_dict()
    return env


def test_ini_listens_on_the_hosts_address_too(pgrig_home: Path) -> None:
    env = Environment(name="e1", port=5440, major=18, listen="10.9.0.11")
    cfg = pooler.PoolerConfig(port=6440, listen="10.9.0.11")
    text = pooler.render_ini(env, cfg, 0)
    assert "listen_addr = 127.0.0.1,10.9.0.11\n" in text
    assert f"* = host={env.socket_dir} port=5440\n" in text  # same host: the unix socket


def test_ini_of_a_pooler_on_its_own_host_reaches_the_server_over_tcp(pgrig_home: Path) -> None:
    env = Environment(name="lab", kind="external", host="10.9.0.11", port=5433)
    cfg = pooler.PoolerConfig(port=6432, listen="10.9.0.12", auth_from="control")
    text = pooler.render_ini(env, cfg, 0)
    assert "* = host=10.9.0.11 port=5433\n" in text
    assert "listen_addr = 127.0.0.1,10.9.0.12\n" in text
    assert "auth_type = scram-sha-256\n" in text


def test_clients_and_sampler_of_a_pooler_on_a_host(pgrig_home: Path) -> None:
    env = remote_env()
    tcp = pooler.client_env(env, "pgrig", "pooler", "tcp")
    assert (tcp["PGHOST"], tcp["PGPORT"], tcp["PGUSER"]) == ("10.9.0.12", "6432", "pgrig_pool")
    assert tcp["PGPASSFILE"] == str(env.dir / "pooler.pgpass") and "PGPASSWORD" not in tcp
    (console,) = pooler.console_params(env)
    assert (console["host"], console["port"], console["dbname"]) == ("10.9.0.12", 6432, "pgbouncer")
    assert console["user"] == "pgrig_stats" and "password" not in console
    assert pooler.config_of(env).target == "postgresql://pgrig_pool@10.9.0.12:6432/"  # type: ignore[union-attr]
    # a local pooler that also listens on an address: local clients still use loopback
    local = Environment(name="e1", port=5440, listen="10.9.0.11")
    local.pooler = pooler.PoolerConfig(port=6440, listen="10.9.0.11").as_dict()
    assert pooler.client_env(local, "pgrig", "pooler", "tcp")["PGHOST"] == "127.0.0.1"


def test_where_the_pooler_runs() -> None:
    own = remote_env()
    assert remote.pooler_host(own) == "h2" and remote.elsewhere(own)
    with_db = remote_env(on="h1", listen="10.9.0.11")
    assert remote.pooler_host(with_db) == "h1" and not remote.elsewhere(with_db)
    bare = Environment(name="lab", kind="remote", on="h1")
    assert remote.pooler_host(bare) is None and not remote.elsewhere(bare)


def test_passfile_and_verifiers() -> None:
    cfg = pooler.PoolerConfig()
    text = auth.passfile_text(cfg, "poolpw", "statspw")
    assert text == "*:*:pgbouncer:pgrig_stats:statspw\n*:*:*:pgrig_pool:poolpw\n"
    v = auth.scram_verifier("x")
    assert auth.check_verifier(v + "\n") == v
    for bad in ("x", "md5abc", "SCRAM-SHA-256$4096:abc", v + "; rm -rf /"):
        with pytest.raises(PgrigError, match="expected SCRAM-SHA-256 verifiers on stdin"):
            auth.check_verifier(bad)


def test_a_local_environment_has_no_pooler_on_a_host(pgrig_home: Path) -> None:
    env = Environment(name="e1", port=5440)
    with pytest.raises(PgrigError, match=r"a pooler on host h2 needs an environment on a host"):
        pooler.add(env, pooler.PoolerConfig(), on="h2")


def test_several_processes_refused_on_a_host(pgrig_home: Path) -> None:
    env = Environment(name="lab", kind="remote", on="h1", host="10.9.0.11", port=5433)
    with pytest.raises(PgrigError, match=r"--processes > 1 is not supported for a pooler on a"):
        pooler.add(env, pooler.options(processes=2), on="h2")


def test_ensure_compares_the_chosen_options_only() -> None:
    placed = pooler.PoolerConfig(port=6432, listen="10.9.0.12", on="h2", auth_from="control")
    assert placed.options() == pooler.options(port=6432).options()
    assert placed.options() != pooler.options(port=6432, pool_size=50).options()


def test_run_samples_the_pooler_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from pgrig.load.remote import host_samplers

    started: list[tuple[str, str, dict[str, str]]] = []

    def fake_add(self: Any, host: str, role: str, pid_files: dict[str, str]) -> None:
        self.roles.setdefault(host, []).append(role)
        started.append((host, role, dict(pid_files)))

    monkeypatch.setattr(host_samplers.HostSamplers, "add", fake_add)
    env = remote_env()
    s = host_samplers.for_env(env, "pgbouncer")
    assert s.roles == {"h1": ["db"], "h2": ["pooler"]}
    assert started[1] == (
        "h2",
        "pooler",
        {"pooler": "/var/lib/pgrig/envs/lab/pooler/pgbouncer-0.pid"},
    )
    started.clear()
    assert host_samplers.for_env(env, "direct").roles == {"h1": ["db"]}  # no pooler in the path
    started.clear()
    same = host_samplers.for_env(remote_env(on="h1"), "pgbouncer")
    assert same.roles == {"h1": ["db", "pooler"]}
    assert len(started) == 1 and set(started[0][2]) == {"server", "pooler"}  # one agent


def test_hosts_table_shows_the_pooler_host() -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.views import run_hosts

    rec = RunRecord(env_name="lab", workload="pgbench:select-only", clients=4, threads=1)
    rec.measured_s = 2.0
    rec.series = {
        "os@h2": {"t": [0.5, 1.5], "cpu_idle": [70.0, 50.0], "cpu_iowait": [0.0, 0.0],
                  "proc_pooler_cpu": [20.0, 30.0]},
        "os@h1": {"t": [0.5, 1.5], "cpu_idle": [40.0, 40.0], "cpu_iowait": [0.0, 0.0],
                  "proc_server_cpu": [100.0, 80.0], "proc_pooler_cpu": [10.0, 14.0]},
    }  # fmt: skip
    rec.extra = {"host_roles": {"h1": ["db", "pooler"], "h2": ["pooler"]}}
    t = run_hosts.hosts_table(rec)
    assert t is not None
    rows = {r[0].text: [c.text for c in r] for r in t.rows}
    assert rows["h2"][1] == "pooler" and rows["h2"][2] == "40.0" and rows["h2"][3] == "pooler 25.0"
    assert rows["h1"][1] == "db, pooler" and rows["h1"][3] == "server 90.0, pooler 12.0"


def test_server_record_guards(pgrig_home: Path) -> None:
    assert pooler.parse_server("10.9.0.11:5433") == ("10.9.0.11", 5433)
    for bad in ("db1:5433", "10.9.0.11", "10.9.0.11:0", "10.9.0.11:x", "$(id):1"):
        with pytest.raises(PgrigError, match="--server"):
            pooler.parse_server(bad)
    record = pooler.for_server("lab", "10.9.0.11", 5433)
    assert record.kind == "external" and record.user == "pgrig_pool"
    assert pooler.for_server("lab", "10.9.0.11", 5433).dir == record.dir  # the same record
    with pytest.raises(PgrigError, match=r"is not the pooler's record of 10\.9\.0\.12:5433"):
        pooler.for_server("lab", "10.9.0.12", 5433)
    with pytest.raises(PgrigError, match="not the record of a pooler"):  # it has none yet
        pooler.check_server_record(record, "10.9.0.11:5433")
    record.pooler = pooler.PoolerConfig(port=6432, auth_from="control").as_dict()
    pooler.check_server_record(record, "10.9.0.11:5433")
    with pytest.raises(PgrigError, match="left alone"):
        pooler.check_server_record(record, "10.9.0.13:5433")
    managed = Environment(name="other", port=5433, host="10.9.0.11")
    managed.pooler = record.pooler
    with pytest.raises(PgrigError, match="left alone"):
        pooler.check_server_record(managed, "10.9.0.11:5433")


def test_cli_refusals(pgrig_home: Path) -> None:
    from typer.testing import CliRunner

    from pgrig.cli.env import app

    res = CliRunner().invoke(app, ["create", "lab", "--pg", "18", "--pooler-on", "h2"])
    assert res.exit_code != 0 and "--pooler-on HOST needs --on HOST" in str(res.exception)
    res = CliRunner().invoke(app, ["pooler", "lab", "add", "--listen", "not-an-ip"])
    assert res.exit_code != 0 and "expected an IP address" in str(res.exception)
    res = CliRunner().invoke(app, ["pooler", "lab", "add", "--server", "10.9.0.11:5433"])
    assert res.exit_code != 0 and "goes with --verifiers-stdin" in str(res.exception)
    res = CliRunner().invoke(
        app,
        ["pooler", "lab", "add", "--server", "10.9.0.11:5433", "--verifiers-stdin"],
        input="x\ny\n",
    )
    assert res.exit_code != 0 and "expected SCRAM-SHA-256 verifiers" in str(res.exception)
    assert not (pgrig_home / "envs" / "lab").exists()  # nothing recorded
