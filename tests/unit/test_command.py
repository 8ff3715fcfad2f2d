"""Run request -> pgbench argv: every option, version awareness. (The request's own rules and
their messages are tested in test_request.py.)"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.load.engines.command import build_pgbench_command, pgbench_major, shell_quote
from pgrig.request import RunRequest, ScriptSpec

PG15 = Path("/usr/lib/postgresql/15/bin/pgbench")


def spec(**kw) -> RunRequest:
    kw.setdefault("scripts", [ScriptSpec(name="pgbench:select-only", builtin="select-only")])
    if "transactions_per_client" not in kw:
        kw.setdefault("duration_s", 10)
    return RunRequest(env_name="e", workload="w", **kw)


def build(s: RunRequest, total: float | None = 10, major: int = 18, **kw) -> list[str]:
    return build_pgbench_command(
        "/bin/pgbench",
        s,
        log_prefix="/w/txlog",
        total_seconds=total,
        pgbench_version_major=major,
        **kw,
    )


def test_basic_timed_run() -> None:
    argv = build(spec(clients=8, threads=2, database="bench"), total=70)
    assert argv == [
        "/bin/pgbench", "-n", "-c", "8", "-j", "2", "-T", "70", "-M", "simple",
        "-b", "select-only@1", "-l", "--log-prefix=/w/txlog", "-P", "1", "bench",
    ]  # fmt: skip


def test_transactions_mode_and_default_database() -> None:
    argv = build(spec(transactions_per_client=500), total=None, progress=False)
    i = argv.index("-t")
    assert argv[i + 1] == "500" and "-T" not in argv
    assert "-P" not in argv
    assert argv[-1] == "pgrig"  # the environment's default database


def test_all_options() -> None:
    s = spec(
        clients=4,
        threads=4,
        rate=1500.5,
        latency_limit_ms=5,
        protocol="prepared",
        max_tries=3,
        defines={"scale": "10", "c_id": "259"},
        scripts=[
            ScriptSpec(name="pgbench:simple-update", builtin="simple-update", weight=2),
            ScriptSpec(name="x.sql", path="/s/x dir/x.sql", weight=1),
        ],
        extra_pgbench_args=["--random-seed=7"],
        database="db",
    )
    argv = build(s, total=12.2)
    joined = " ".join(argv)
    assert "-T 13" in joined  # whole seconds, rounded up so the window fits
    assert "-R 1500.5" in joined and "-L 5" in joined and "-M prepared" in joined
    assert "--max-tries=3" in argv and "--failures-detailed" in argv
    assert argv[argv.index("-D") + 1] == "scale=10"
    assert "c_id=259" in argv
    assert argv[argv.index("-b") + 1] == "simple-update@2"
    assert argv[argv.index("-f") + 1] == "/s/x dir/x.sql@1"
    assert argv.index("-b") < argv.index("-f")  # script order = script numbers in the log
    assert argv[-2:] == ["--random-seed=7", "db"]


def test_no_log_prefix_means_no_log() -> None:
    argv = build_pgbench_command(
        "/bin/pgbench", spec(), log_prefix="", total_seconds=5, pgbench_version_major=18
    )
    assert "-l" not in argv and not any(a.startswith("--log-prefix") for a in argv)


def test_max_tries_one_adds_nothing() -> None:
    argv = build(spec(max_tries=1))
    assert not any(a.startswith("--max-tries") or a == "--failures-detailed" for a in argv)


def test_max_tries_needs_pgbench_15() -> None:
    with pytest.raises(
        PgrigError, match=r"--max-tries needs pgbench 15 or newer \(this is pgbench 14\)"
    ):
        build(spec(max_tries=3), major=14)
    assert "--max-tries=3" in build(spec(max_tries=3), major=15)
    build(spec(), major=14)  # without retries 14 is fine


@pytest.mark.skipif(not PG15.exists(), reason="PostgreSQL 15 pgbench not installed")
def test_version_asked_from_the_binary() -> None:
    assert pgbench_major(str(PG15)) == 15
    argv = build_pgbench_command(str(PG15), spec(max_tries=2), "/w/t", 5)
    assert "--failures-detailed" in argv


def test_unrunnable_binary_has_no_version() -> None:
    assert pgbench_major("/nonexistent/pgbench") is None


def test_a_request_without_scripts_is_refused() -> None:
    with pytest.raises(PgrigError, match="no scripts to run"):
        build(spec(scripts=[]))


def test_shell_quote_roundtrips() -> None:
    argv = build(
        spec(scripts=[ScriptSpec(name="x", path="/a b/it's.sql", weight=3)], defines={"v": "a b"})
    )
    line = shell_quote(argv)
    assert shlex.split(line) == argv
    assert "'/a b/it'\"'\"'s.sql@3'" in line


@pytest.mark.parametrize(
    ("pghost", "network"),
    [("10.0.0.5", True), ("db1.lab", True), ("/var/run/pg", False), ("127.0.0.1", False),
     ("localhost", False), ("::1", False), (None, False)],
)  # fmt: skip
def test_over_the_network_the_database_argument_bounds_a_silent_server(
    pghost: str | None, network: bool
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    argv = build(spec(database="a b'c"), target_host=pghost)
    if not network:
        assert argv[-1] == "a b'c"  # as before: nothing added where no network can fail
        return
    params = conninfo_to_dict(argv[-1])  # pgbench expands a connection string as libpq does
    assert params == {
        "dbname": "a b'c", "keepalives": "1", "keepalives_idle": "2",
        "keepalives_interval": "1", "keepalives_count": "3", "tcp_user_timeout": "5000",
    }  # fmt: skip


def test_a_remote_environments_connections_bound_a_silent_server() -> None:
    from psycopg.conninfo import conninfo_to_dict

    from pgrig.provision.state.environment import Environment

    remote = Environment(name="lab", kind="remote", on="db1", host="10.0.0.5", port=5432)
    params = conninfo_to_dict(remote.conninfo("bench"))
    assert params["tcp_user_timeout"] == "5000" and params["keepalives"] == "1"
    here = Environment(name="here", kind="managed", host="127.0.0.1", port=5432)
    assert "tcp_user_timeout" not in conninfo_to_dict(here.conninfo("bench"))


@pytest.mark.parametrize("db", ["a b", 'x"y', "a;b=c", "it's", "postgresql://evil"])
def test_a_database_name_stays_one_value_in_every_connection_string(db: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    from pgrig.provision.state.environment import Environment, dbname_arg

    env = Environment(name="e", kind="managed", host="127.0.0.1", port=5432, user="postgres")
    assert conninfo_to_dict(env.conninfo(db))["dbname"] == db
    assert env.libpq_env(db)["PGDATABASE"] == db
    arg = dbname_arg(db)  # pgbench/psql read a positional name holding '=' as a conninfo
    assert arg == db or conninfo_to_dict(arg) == {"dbname": db}
