"""RunSpec -> pgbench argv: every option, version awareness, and one clear error per mistake."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from pgrig.errors import PgrigError
from pgrig.load.command import build_pgbench_command, pgbench_major, shell_quote
from pgrig.load.spec import RunSpec, ScriptSpec

PG15 = Path("/usr/lib/postgresql/15/bin/pgbench")


def spec(**kw) -> RunSpec:
    kw.setdefault("scripts", [ScriptSpec(name="pgbench:select-only", builtin="select-only")])
    return RunSpec(env_name="e", workload="w", **kw)


def build(s: RunSpec, total: float | None = 10, major: int = 18, **kw) -> list[str]:
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
    argv = build(spec(transactions=500), total=None, progress=False)
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


@pytest.mark.parametrize(
    ("kw", "total", "message"),
    [
        ({"duration_s": 0}, 0, "--duration must be > 0 (got 0)"),
        ({"duration_s": -5}, -5, "--duration must be > 0 (got -5)"),
        ({"transactions": 0}, None, "--transactions must be > 0 (got 0)"),
        ({"clients": 0, "threads": 0}, 5, "--clients must be >= 1 (got 0)"),
        ({"threads": 0}, 5, "--threads must be >= 1 (got 0)"),
        (
            {"clients": 2, "threads": 4},
            5,
            "--threads (4) cannot exceed --clients (2): pgbench refuses",
        ),
        ({"rate": 0}, 5, "--rate must be > 0 (got 0)"),
        ({"rate": -1.5}, 5, "--rate must be > 0 (got -1.5)"),
        ({"latency_limit_ms": 0}, 5, "--latency-limit must be > 0 (got 0)"),
        ({"protocol": "fast"}, 5, "--protocol must be one of simple, extended, prepared"),
        ({}, None, "give --duration or --transactions"),
        ({"transactions": 5, "duration_s": 5}, 5, "give either --duration or --transactions"),
        ({"scripts": []}, 5, "no scripts to run"),
        ({"max_tries": -1}, 5, "--max-tries must be >= 0 (got -1)"),
        ({"warmup_s": -1}, 5, "--warmup must be >= 0 (got -1)"),
        (
            {"scripts": [ScriptSpec(name="a", builtin="select-only", weight=0)]},
            5,
            "all script weights are 0",
        ),
        (
            {"scripts": [ScriptSpec(name="a", builtin="tpcc")]},
            5,
            "unknown pgbench builtin 'tpcc'",
        ),
        ({"defines": {"a b": "1"}}, 5, "--define: invalid variable name 'a b'"),
    ],
)
def test_validation_messages(kw: dict, total: float | None, message: str) -> None:
    with pytest.raises(PgrigError) as e:
        build(spec(**kw), total=total)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_shell_quote_roundtrips() -> None:
    argv = build(
        spec(scripts=[ScriptSpec(name="x", path="/a b/it's.sql", weight=3)], defines={"v": "a b"})
    )
    line = shell_quote(argv)
    assert shlex.split(line) == argv
    assert "'/a b/it'\"'\"'s.sql@3'" in line
