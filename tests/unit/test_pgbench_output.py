"""pgbench summary, progress, version and error parsing against real captured outputs (14-18).

Fixtures: tests/fixtures/pgbench/<major>/<case>.{cmd,stdout,stderr,rc} (see capture.sh there).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.load.engines.pgbench_output import (
    PgbenchSummary,
    ProgressPoint,
    error_lines,
    parse_progress_line,
    parse_server_version,
    parse_summary,
    parse_version,
    version_major,
)

ROOT = Path(__file__).parents[1] / "fixtures" / "pgbench"
MAJORS = (14, 15, 16, 17, 18)


def out(major: int, case: str) -> tuple[str, str]:
    d = ROOT / str(major)
    return (d / f"{case}.stdout").read_text(), (d / f"{case}.stderr").read_text()


def summary(major: int, case: str) -> PgbenchSummary:
    stdout, stderr = out(major, case)
    return parse_summary(stdout, stderr)


def progress(major: int, case: str) -> list[ProgressPoint]:
    points = [parse_progress_line(line) for line in out(major, case)[1].splitlines()]
    return [p for p in points if p is not None]


# --- version ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version", "major"),
    [
        ("pgbench (PostgreSQL) 18.6\n", "18.6", 18),
        ("pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n", "15.18", 15),
        ("pgbench (PostgreSQL) 19devel\n", "19devel", 19),
        ("pgbench (PostgreSQL) 18beta2\n", "18beta2", 18),
        ("pgbench (14.23, server 18.6)\ntransaction type: x\n", "14.23", 14),
        ("pgbench (15.18 (Debian 15.18-0+deb12u1))\n", "15.18", 15),
        ("psql (PostgreSQL) 18.6", None, None),
        ("", None, None),
    ],
)
def test_parse_version(text: str, version: str | None, major: int | None) -> None:
    assert parse_version(text) == version
    assert version_major(parse_version(text)) == major


@pytest.mark.parametrize("major", MAJORS)
def test_summary_header_versions(major: int) -> None:
    stdout, _ = out(major, "select_only")
    assert version_major(parse_version(stdout)) == major
    # pgbench names the server only when it differs (14, 16 and 17 ran against an 18 server)
    assert parse_server_version(stdout) == (None if major in (15, 18) else "18.6")


# --- summaries -------------------------------------------------------------------------------


@pytest.mark.parametrize("major", MAJORS)
def test_select_only_summary(major: int) -> None:
    s = summary(major, "select_only")
    assert s.complete and not s.aborted
    assert s.transaction_type == "<builtin: select only>"
    assert (s.scaling_factor, s.query_mode, s.clients, s.threads) == (2, "simple", 4, 2)
    assert s.duration_s == (2.0 if major in (14, 16, 17) else 3.0)
    assert s.transactions_per_client is None
    assert s.processed and s.processed > 1000
    assert s.expected is None
    assert s.latency_avg_ms and s.latency_avg_ms > 0
    assert s.latency_stddev_ms is not None  # measured: -P was given
    assert s.initial_connection_time_ms and s.initial_connection_time_ms > 0
    assert s.tps and s.tps > 100
    assert s.tps_note == "without initial connection time"
    assert s.scripts == []
    assert (s.skipped, s.lag_avg_ms, s.latency_limit_ms, s.retried) == (None, None, None, None)
    if major == 14:  # pgbench 14 has neither tries nor failures: None, never 0
        assert s.max_tries is None and s.failed is None
    else:
        assert s.max_tries == 1 and s.failed == 0


def test_select_only_exact_values_18() -> None:
    s = summary(18, "select_only")
    stdout, _ = out(18, "select_only")
    for line in stdout.splitlines():
        if line.startswith("number of transactions actually processed: "):
            assert s.processed == int(line.split(": ")[1])
        if line.startswith("tps = "):
            assert s.tps == float(line.split()[2])
        if line.startswith("latency average = "):
            assert s.latency_avg_ms == float(line.split()[3])


@pytest.mark.parametrize("major", MAJORS)
def test_multi_script_blocks(major: int) -> None:
    s = summary(major, "multi")
    assert s.transaction_type == "multiple scripts"
    assert [x.number for x in s.scripts] == [1, 2]
    upd, read = s.scripts
    assert upd.name == "<builtin: simple update>"
    assert read.name.endswith("/read.sql")
    assert (upd.weight, read.weight) == (2, 1)
    # per-script processed counts add up to the total (18 prints failures separately)
    assert upd.transactions + read.transactions == s.processed
    assert upd.tps and read.tps and abs(upd.tps + read.tps - s.tps) < 0.01 * s.tps
    assert upd.latency_avg_ms > read.latency_avg_ms > 0
    assert upd.latency_stddev_ms is not None
    assert upd.failed == (None if major == 14 else 0)


@pytest.mark.parametrize("major", (15, 17, 18))
def test_retries_detailed_failures(major: int) -> None:
    s = summary(major, "retries")
    assert s.max_tries == 3
    assert s.failed and s.failed > 0
    assert s.serialization_failures is not None and s.deadlock_failures is not None
    assert s.serialization_failures + s.deadlock_failures == s.failed
    assert s.retried and s.total_retries and s.total_retries >= s.retried
    rr, dl = s.scripts
    assert (rr.weight, dl.weight) == (3, 1)
    assert rr.failed + dl.failed == s.failed
    assert rr.serialization_failures + dl.serialization_failures == s.serialization_failures
    assert rr.retried + dl.retried == s.retried
    assert rr.total_retries + dl.total_retries == s.total_retries
    # 18 prints " - N transactions" including failures, then the processed count: we keep
    # the processed one, as 15-17 do
    assert rr.transactions + dl.transactions == s.processed


def test_retries_without_failures_detailed_16() -> None:
    s = summary(16, "retries")
    assert s.max_tries == 3 and s.failed and s.failed > 0
    assert s.serialization_failures is None and s.deadlock_failures is None
    assert s.retried and s.total_retries
    assert sum(x.failed for x in s.scripts) == s.failed


def test_retries_exact_18() -> None:
    s = summary(18, "retries")
    stdout, _ = out(18, "retries")
    head = stdout.split("SQL script 1")[0]
    assert f"number of failed transactions: {s.failed} (" in head
    assert f"number of serialization failures: {s.serialization_failures} (" in head
    assert f"total number of retries: {s.total_retries}\n" in head
    block1 = stdout.split("SQL script 1")[1].split("SQL script 2")[0]
    assert f"actually processed: {s.scripts[0].transactions} (tps = " in block1


@pytest.mark.parametrize("major", (14, 15, 18))
def test_rate_with_latency_limit(major: int) -> None:
    s = summary(major, "rate")
    assert s.skipped is not None and s.skipped > 0
    assert s.latency_limit_ms == 0.1
    assert s.latency_limit_count is not None and 0 < s.latency_limit_count <= s.processed
    assert s.lag_avg_ms is not None and s.lag_max_ms is not None
    assert s.lag_max_ms >= s.lag_avg_ms


@pytest.mark.parametrize("major", (15, 18))
def test_transactions_mode(major: int) -> None:
    s = summary(major, "tmode")
    assert s.transactions_per_client == 50
    assert s.duration_s is None
    assert (s.processed, s.expected) == (200, 200)
    assert s.transaction_type == "<builtin: TPC-B (sort of)>"


@pytest.mark.parametrize("major", (15, 18))
def test_tpcb_with_statement_latencies(major: int) -> None:
    s = summary(major, "tpcb")
    assert s.query_mode == "prepared"
    assert s.complete and s.tps
    assert s.scripts == []  # -r with one script: statement rows only, no script block


@pytest.mark.parametrize("major", (14, 15, 18))
def test_aborted_run(major: int) -> None:
    assert (ROOT / str(major) / "aborted.rc").read_text().strip() == "2"
    stdout, stderr = out(major, "aborted")
    s = parse_summary(stdout, stderr)
    assert s.aborted
    assert s.processed and s.processed > 0  # partial results are still printed
    assert not parse_summary(stdout).aborted  # the news is on stderr


@pytest.mark.parametrize("major", (15, 18))
def test_killed_pgbench_has_no_summary(major: int) -> None:
    s = summary(major, "killed")
    assert not s.complete and s.tps is None and s.processed is None
    assert version_major(s.pgbench_version) == major


def test_empty_stdout() -> None:
    s = parse_summary("")
    assert s == PgbenchSummary()
    assert s.as_dict()["scripts"] == []


def test_old_two_tps_lines_keep_excluding() -> None:
    text = (
        "tps = 1000.5 (including connections establishing)\n"
        "tps = 1010.25 (excluding connections establishing)\n"
    )
    s = parse_summary(text)
    assert s.tps == 1010.25 and s.tps_note == "excluding connections establishing"


def test_reconnect_mode_lines() -> None:
    text = "average connection time = 1.234 ms\ntps = 50.1 (including reconnection times)\n"
    s = parse_summary(text)
    assert s.average_connection_time_ms == 1.234
    assert s.tps == 50.1 and s.tps_note == "including reconnection times"


def test_pgbench_14_percent_with_space() -> None:
    s = summary(14, "rate")
    stdout, _ = out(14, "rate")
    assert " %)" in stdout  # the quirk is real
    assert s.skipped == int(stdout.split("skipped: ")[1].split()[0])


def test_as_dict_roundtrip() -> None:
    d = summary(15, "multi").as_dict()
    assert d["scripts"][0]["weight"] == 2 and d["clients"] == 4


# --- progress --------------------------------------------------------------------------------


def test_progress_line_documented_form() -> None:
    p = parse_progress_line("progress: 5.0 s, 24347.7 tps, lat 0.152 ms stddev 0.045, 0 failed")
    assert p == ProgressPoint(
        elapsed_s=5.0, tps=24347.7, latency_ms=0.152, stddev_ms=0.045, failed=0
    )


@pytest.mark.parametrize("major", MAJORS)
def test_progress_from_fixtures(major: int) -> None:
    points = progress(major, "select_only")
    assert points and [p.elapsed_s for p in points] == [float(i + 1) for i in range(len(points))]
    assert all(p.tps and p.tps > 0 and p.latency_ms and p.stddev_ms is not None for p in points)
    assert all(p.failed == (None if major == 14 else 0) for p in points)


@pytest.mark.parametrize("major", (14, 15, 18))
def test_progress_with_lag_and_skipped(major: int) -> None:
    points = progress(major, "rate")
    assert points
    assert all(p.lag_ms is not None and p.skipped is not None for p in points)
    assert sum(p.skipped for p in points) > 0


@pytest.mark.parametrize("major", (15, 16, 17, 18))
def test_progress_with_retries(major: int) -> None:
    points = progress(major, "retries")
    assert points
    for p in points:
        assert p.failed is not None and p.retried is not None and p.retries is not None
        assert p.retries >= p.retried


def test_progress_with_lag_no_skipped() -> None:
    points = progress(18, "paced")
    assert points and all(p.lag_ms is not None and p.skipped is None for p in points)


@pytest.mark.parametrize(
    "line",
    [
        "progress: 3.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed",
        "progress: 3.0 s, 0.0 tps, lat -nan ms stddev -nan",
    ],
)
def test_progress_empty_interval_gives_none(line: str) -> None:
    p = parse_progress_line(line)
    assert p is not None and p.tps == 0.0 and p.latency_ms is None and p.stddev_ms is None


def test_progress_timestamp_and_other_lines() -> None:
    p = parse_progress_line(
        "progress: 1763700000.123 s, 10.0 tps, lat 1.000 ms stddev 0.100, 2 failed, "
        "lag 0.5 ms, 3 skipped, 4 retried, 5 retries"
    )
    assert p is not None
    assert (p.elapsed_s, p.failed, p.lag_ms, p.skipped, p.retried, p.retries) == (
        1763700000.123,
        2,
        0.5,
        3,
        4,
        5,
    )
    assert parse_progress_line("starting vacuum...end.") is None
    assert parse_progress_line("WARNING:  terminating connection") is None
    assert parse_progress_line("") is None


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("major", (14, 15, 18))
def test_syntax_error_message_exact(major: int) -> None:
    assert (ROOT / str(major) / "syntax_error.rc").read_text().strip() == "1"
    _, stderr = out(major, "syntax_error")
    lines = error_lines(stderr)
    assert lines == stderr.rstrip("\n").splitlines()  # the whole message, exactly
    assert lines[0].startswith("pgbench: ")
    assert lines[0].endswith('bad.sql:1: syntax error in command "set"')
    assert lines[1] == "\\set aid random(1, 100000 * :scale"
    assert lines[2].strip() == "^ error found here"


@pytest.mark.parametrize("major", (14, 15, 18))
def test_aborted_errors_skip_progress_and_server_notices(major: int) -> None:
    _, stderr = out(major, "aborted")
    lines = error_lines(stderr)
    assert lines[-1].endswith("Run was aborted; the above results are incomplete.")
    assert all(line.startswith("pgbench: ") for line in lines)
    assert not any("WARNING" in line or line.startswith("progress:") for line in lines)
    assert sum("aborted in command" in line for line in lines) == 4


@pytest.mark.parametrize("major", (14, 15, 18))
def test_connection_error_keeps_continuation_line(major: int) -> None:
    _, stderr = out(major, "connect_error")
    lines = error_lines(stderr)
    assert lines[0].startswith('pgbench: error: connection to server at "127.0.0.1", port')
    assert lines[1] == "\tIs the server running on that host and accepting TCP/IP connections?"


def test_no_errors_in_clean_run() -> None:
    assert error_lines(out(18, "select_only")[1]) == []
    assert error_lines("pgbench: warning: scale option ignored\n") == []
