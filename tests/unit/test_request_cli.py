"""`pgrig run` and `pgrig db generate` refuse nonsense before touching anything: one line
naming the flag, a non-zero exit, no archive, no environment needed. (Against a real server,
tests/integration/test_run_cli.py checks that nothing is archived or generated either.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pgrig.cli import app as cli_app
from pgrig.errors import PgrigError

RUN = ["run", "nowhere", "--workload", "pgbench:select-only"]


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    cli_app._register()
    return cli_app.app


def refusal(app: typer.Typer, pgrig_home: Path, *args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, PgrigError), result.output
    assert result.exception.exit_code != 0
    message = str(result.exception)
    assert "\n" not in message
    assert not any(pgrig_home.iterdir()), "nothing may be written before the input is valid"
    return message


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--duration", "0.001"], "--duration must be at least 1 s (got 0.001 s)"),
        (["--duration", "0"], "--duration must be at least 1 s (got 0 s)"),
        (["--duration", "10", "--warmup", "-1"], "--warmup must be >= 0 (got -1)"),
        # pgbench runs whole seconds: 1.5 s would run 2 and be recorded 1.5 (issue 43, case 18)
        (["--duration", "1.5s"], "--duration must be whole seconds (got 1.5 s): pgbench runs"),
        # a typo's 11 years, refused as tune refuses them (issue 43, case 50)
        (["--duration", "100000h"], "--duration must be at most 720h (got 100000h)"),
        (["--duration", "10", "--warmup", "100000h"], "--warmup must be <= 2592000"),
        ([], "--duration is required (how long to run"),
        (["-t", "10", "-T", "10"], "--transactions cannot be combined with --duration"),
        (["-T", "10", "-L", "5"], "--latency-limit needs --rate"),
        (["-t", "10", "--max-tries", "0"], "--max-tries 0 (unlimited retries) needs --duration"),
        (["-T", "10", "-c", "2", "-j", "4"], "--threads cannot exceed --clients (4 > 2)"),
        (["-T", "10", "-c", "0"], "--clients must be >= 1 (got 0)"),
        (["-T", "10", "-R", "0"], "--rate must be > 0 (got 0)"),
        (["-T", "10", "-M", "fast"], "--protocol must be one of simple, extended, prepared"),
        (["-T", "10", "--via", "bus"], "--via must be one of direct, pooler, pgbouncer"),
        (["-T", "10", "--connect", "udp"], "--connect must be one of tcp, socket"),
        (["-T", "10", "--mix", "45,43,4,4,4"], "--mix applies only to --workload tpcc"),
        (["-T", "10", "--all-warehouses"], "--all-warehouses applies only to --workload tpcc"),
        (["-T", "10", "--server-cpus", "x"], "--server-cpus 'x' is not a CPU number or range"),
        (["-T", "10", "-D", "a b=1"], "--define has an invalid variable name 'a b'"),
    ],
)
def test_run_refusals(app: typer.Typer, pgrig_home: Path, args: list[str], message: str) -> None:
    assert refusal(app, pgrig_home, *RUN, *args).startswith(message)


def test_tpcc_options_with_tpcc(app: typer.Typer, pgrig_home: Path) -> None:
    base = ["run", "nowhere", "--workload", "tpcc", "-T", "10"]
    assert refusal(app, pgrig_home, *base, "--mix", "1,2").startswith("--mix needs 5 weights")
    assert refusal(app, pgrig_home, *base, "-D", "x=1").startswith(
        "--define does not apply to --workload tpcc"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scale", "0"], "--scale must be >= 1 (got 0)"),
        (["--scale", "-5"], "--scale must be >= 1 (got -5)"),
        (["--scenario", "tpcc", "--warehouses", "0"], "--warehouses must be >= 1 (got 0)"),
        (["--scenario", "tpcc"], "--warehouses is required for --scenario tpcc"),
        (["--db", "template1"], "--db must not be template1: it is a template database"),
        (["--db", "template0"], "--db must not be template0: it is a template database"),
        (["--db", "postgres"], "--db must not be postgres: it is the maintenance database"),
        (["--scenario", "tpcc", "--warehouses", "1", "--scale", "3"], "--scale applies only"),
        (["--partition"], "--partition applies only to --scenario tpcc or chbench (got 'pgbench')"),
        (
            ["--jobs", "4"],
            "--jobs applies only to --scenario tpcc or chbench or tickets or sysbench or tpch "
            "(got 'pgbench')",
        ),
        (["--rows", "10"], "--rows applies only to --scenario tickets (got 'pgbench')"),
        (["--scenario", "pgbench", "--sql", "x.sql"], "--sql applies only to --scenario custom"),
        (
            ["--scenario", "tpcd"],
            "--scenario must be one of pgbench, tpcc, chbench, tickets, custom, sysbench",
        ),
    ],
)
def test_db_generate_refusals(
    app: typer.Typer, pgrig_home: Path, args: list[str], message: str
) -> None:
    assert refusal(app, pgrig_home, "db", "generate", "nowhere", *args).startswith(message)
