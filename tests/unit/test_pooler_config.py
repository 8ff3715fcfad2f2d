"""Pooler options, generated configuration, SCRAM verifiers and run pre-checks (no servers)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.provision import pooler
from pgrig.provision.pooler import capacity
from pgrig.provision.pooler import daemon as pooler_daemon
from pgrig.provision.state.environment import Environment

# Captured from PostgreSQL 15.18: SET password_encryption = 'scram-sha-256';
# CREATE ROLE r PASSWORD 'pencil'; SELECT rolpassword FROM pg_authid WHERE rolname = 'r'
PG15_PENCIL = (
    "SCRAM-SHA-256$4096:PK9X0vfkxxgmSrnpoaRxhA==$rFknbcTEHYNuAjgrSP403gR+mYylRVxandGuLXibKpo="
    ":NLLYCF7lGRODD5YcM1eaONKm151bbInNImttr04hmMA="
)


def env_with_pooler(home: Path, **cfg: object) -> Environment:
    env = Environment(name="e1", port=5440, bindir="/usr/lib/postgresql/15/bin", major=15)
    env.pooler = pooler.PoolerConfig(**{"port": 6440, **cfg}).as_dict()  # type: ignore[arg-type]
    return env


def test_scram_verifier_matches_postgresql() -> None:
    iterations, rest = PG15_PENCIL.split("$")[1].split(":")
    salt = base64.b64decode(rest)
    assert pooler.scram_verifier("pencil", salt, int(iterations)) == PG15_PENCIL


def test_scram_verifier_fresh_salt_each_time() -> None:
    a, b = pooler.scram_verifier("x"), pooler.scram_verifier("x")
    assert a != b and a.startswith(f"SCRAM-SHA-256${pooler.SCRAM_ITERATIONS}:")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pool_size": 0}, "--pool-size must be >= 1 (got 0)"),
        ({"mode": "bogus"}, "--mode must be one of session, transaction, statement"),
        ({"kind": "odyssey"}, "pooler kind must be one of pgbouncer (got 'odyssey')"),
        ({"max_client_conn": 1}, "--max-client-conn must be >= 2"),
        ({"processes": 0}, "--processes must be between 1 and 64 (got 0)"),
        ({"port": 80}, "--port must be between 1024 and 65535 (got 80)"),
    ],
)
def test_bad_options(kwargs: dict, message: str) -> None:
    with pytest.raises(PgrigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        pooler.options(**kwargs)


def test_options_from_table_names_keys() -> None:
    cfg = pooler.options_from_table({"mode": "session", "pool_size": 100, "processes": 2})
    assert (cfg.mode, cfg.pool_size, cfg.processes) == ("session", 100, 2)
    with pytest.raises(
        PgrigError, match=r"^pool_size: must be >= 1 \(got 0\): a pool without server connections"
    ):
        pooler.options_from_table({"pool_size": 0})
    with pytest.raises(
        PgrigError,
        match=r"^size: unknown key \(did you mean 'pool_size'\?\); allowed here: kind, mode",
    ):
        pooler.options_from_table({"size": 3})
    with pytest.raises(PgrigError, match=r"^pool_size: expected an integer \(got '10'\)"):
        pooler.options_from_table({"pool_size": "10"})


def test_nofile_covers_clients_and_servers() -> None:
    cfg = pooler.PoolerConfig(max_client_conn=5000, pool_size=100)
    assert cfg.nofile >= 5000 + 100
    assert pooler.PoolerConfig().nofile >= 4096


def test_render_ini_per_process(pgrig_home: Path) -> None:
    env = env_with_pooler(pgrig_home, processes=2, pool_size=7, mode="session")
    cfg = pooler.config_of(env)
    assert cfg is not None
    one, two = pooler.render_ini(env, cfg, 0), pooler.render_ini(env, cfg, 1)
    for text, i in ((one, 0), (two, 1)):
        assert "listen_addr = 127.0.0.1\n" in text
        assert "listen_port = 6440\n" in text
        assert "so_reuseport = 1\n" in text
        assert "auth_type = scram-sha-256\n" in text
        assert f"unix_socket_dir = {env.dir}/pooler/run-{i}\n" in text
        assert f"pidfile = {env.dir}/pooler/pgbouncer-{i}.pid\n" in text
        assert f"logfile = {env.dir}/pooler/pgbouncer-{i}.log\n" in text
        assert "pool_mode = session\n" in text and "default_pool_size = 7\n" in text
        assert f"* = host={env.socket_dir} port=5440\n" in text
        assert "stats_users = pgrig_stats\n" in text
    single = pooler.config_of(env_with_pooler(pgrig_home))
    assert single is not None
    assert "so_reuseport = 0\n" in pooler.render_ini(env, single, 0)


def test_normalize_via() -> None:
    assert pooler.normalize_via("direct") == "direct"
    assert pooler.normalize_via("pooler") == "pgbouncer"
    assert pooler.normalize_via("PgBouncer") == "pgbouncer"
    with pytest.raises(PgrigError, match=r"--via must be direct or pooler \(got 'proxy'\)"):
        pooler.normalize_via("proxy")


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> dict:
    """server_limits without a server: max_connections 100, 3 reserved."""
    state = {"mc": 100, "reserved": 3}

    def fake(env: Environment, overrides: dict | None = None) -> tuple[int, int]:
        mc = int((overrides or {}).get("max_connections", state["mc"]))
        return mc, state["reserved"]

    monkeypatch.setattr(capacity, "server_limits", fake)
    return state


def check(env: Environment, **kw: object) -> str:
    args = {"clients": 10, "via": "direct", "connect": "tcp", "protocol": "simple", **kw}
    return pooler.check_run(env, **args)  # type: ignore[arg-type]


def test_direct_clients_beyond_max_connections(pgrig_home: Path, limits: dict) -> None:
    env = Environment(name="x", port=5440)
    assert check(env, clients=97) == "direct"
    with pytest.raises(PgrigError) as e:
        check(env, clients=120)
    assert str(e.value) == (
        "120 clients exceed max_connections=100 on env x (3 reserved for superusers): raise it "
        "with `pgrig env set x max_connections=200` or use --via pooler"
    )
    assert check(env, clients=1000, run_settings={"max_connections": "1100"}) == "direct"


def test_pooler_checks(pgrig_home: Path, limits: dict) -> None:
    bare = Environment(name="x", port=5440)
    with pytest.raises(PgrigError, match="environment 'x' has no pooler: add one with"):
        check(bare, via="pooler")
    env = env_with_pooler(pgrig_home, max_client_conn=1000)
    assert check(env, via="pooler", clients=999) == "pgbouncer"
    with pytest.raises(PgrigError, match="1000 clients exceed max_client_conn=1000"):
        check(env, via="pooler", clients=1000)
    with pytest.raises(PgrigError, match="--protocol prepared does not work through pgbouncer"):
        check(env, via="pooler", protocol="prepared")
    with pytest.raises(PgrigError, match="--connect must be tcp or socket"):
        check(env, via="pooler", connect="udp")
    multi = env_with_pooler(pgrig_home, processes=2)
    with pytest.raises(PgrigError, match="--connect socket reaches only one of the 2"):
        check(multi, via="pooler", connect="socket")
    session = env_with_pooler(pgrig_home, mode="session", pool_size=20)
    with pytest.raises(PgrigError, match="session-mode pool of 20 server connections"):
        check(session, via="pooler", clients=50)
    big = env_with_pooler(pgrig_home, pool_size=60, processes=2)
    with pytest.raises(PgrigError, match=r"a pool of 60 x 2 processes = 120 server connections"):
        check(big, via="pooler")


def test_client_env_never_holds_a_password(pgrig_home: Path) -> None:
    env = env_with_pooler(pgrig_home)
    tcp = pooler.client_env(env, "db1", "pooler", "tcp")
    assert tcp["PGHOST"] == "127.0.0.1" and tcp["PGPORT"] == "6440"
    assert tcp["PGUSER"] == "pgrig_pool" and tcp["PGDATABASE"] == "db1"
    assert tcp["PGPASSFILE"] == str(env.dir / "pooler.pgpass")
    assert "PGPASSWORD" not in tcp
    sock = pooler.client_env(env, "db1", "pgbouncer", "socket")
    assert sock["PGHOST"] == str(env.dir / "pooler" / "run-0")
    direct = pooler.client_env(env, "db1", "direct", "socket")
    assert direct["PGHOST"] == str(env.socket_dir) and direct["PGPORT"] == "5440"
    assert pooler.client_env(env, "db1", "direct", "tcp")["PGHOST"] == "127.0.0.1"


def test_console_params_one_per_process(pgrig_home: Path) -> None:
    env = env_with_pooler(pgrig_home, processes=3)
    params = pooler.console_params(env)
    assert [p["host"] for p in params] == [str(env.dir / f"pooler/run-{i}") for i in range(3)]
    assert {p["dbname"] for p in params} == {"pgbouncer"}
    assert {p["user"] for p in params} == {"pgrig_stats"}
    assert all("password" not in p for p in params)


def test_version_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    class Done:
        stdout = "PgBouncer 1.18.0\nlibevent 2.1.12-stable\n"

    monkeypatch.setattr(pooler_daemon.subprocess, "run", lambda *a, **k: Done())
    assert pooler.version("/usr/sbin/pgbouncer") == "1.18.0"
