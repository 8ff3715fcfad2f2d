"""Totals from pgbench's -P lines (load/engines/progress_totals.py), checked against pgbench's own
summary
on the real captures of tests/fixtures/pgbench, and on a real interrupted pgbench (SIGINT: no
summary at all, tests/fixtures/pgbench/15/interrupted.*)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgrig.load.engines import pgbench_output, progress_totals

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pgbench"


def _capture(version: str, case: str) -> tuple[list, pgbench_output.PgbenchSummary | None, int]:
    d = FIXTURES / version
    err, out = (d / f"{case}.stderr").read_text(), (d / f"{case}.stdout").read_text()
    points = [p for line in err.splitlines() if (p := pgbench_output.parse_progress_line(line))]
    argv = (d / f"{case}.cmd").read_text().split()
    duration = int(argv[argv.index("-T") + 1]) if "-T" in argv else 0
    return points, pgbench_output.parse_summary(out, err), duration


# (version, case): captures whose progress lines cover every second of the run
COVERED = [("15", "select_only"), ("15", "tpcb"), ("15", "retries"), ("18", "tpcb"),
           ("18", "multi"), ("18", "rate")]  # fmt: skip


@pytest.mark.parametrize(("version", "case"), COVERED)
def test_totals_agree_with_pgbenchs_summary(version: str, case: str) -> None:
    points, summary, duration = _capture(version, case)
    assert summary is not None and len(points) == duration
    t = progress_totals.totals(points)
    assert t is not None and t.lines == duration and t.window_s == duration
    # what ran after the last line (the drain of in-flight transactions) is not in a line
    assert summary.processed - 10 <= t.transactions <= summary.processed
    assert t.latency_avg_ms == pytest.approx(summary.latency_avg_ms, rel=0.01)
    assert t.latency_stddev_ms == pytest.approx(summary.latency_stddev_ms, rel=0.01)
    # pgbench's TPS leaves the initial connection time out; the lines' window does not
    assert t.tps == pytest.approx(summary.tps, rel=0.02)
    assert t.failed == summary.failed
    if case == "retries":
        assert t.retried == summary.retried


def test_lines_that_stop_early_cover_only_their_seconds() -> None:
    points, summary, duration = _capture("18", "select_only")  # -j 2: no line for second 3
    t = progress_totals.totals(points)
    assert t is not None and summary is not None and len(points) == 2 < duration
    assert t.window_s == 2.0
    assert t.transactions == round(3641.2 + 3581.5)  # independently: rate x 1 s per line
    assert t.transactions < summary.processed


def test_a_real_interrupted_pgbench_keeps_its_figures() -> None:
    points, summary, _ = _capture("15", "interrupted")
    assert summary is None or not summary.complete  # SIGINT: pgbench printed no summary
    rc = int((FIXTURES / "15" / "interrupted.rc").read_text())
    assert rc != 0
    t = progress_totals.totals(points)
    assert t is not None and t.lines == len(points) >= 2
    assert t.window_s == points[-1].elapsed_s
    assert t.transactions == round(sum(p.tps * 1.0 for p in points))
    assert t.tps == pytest.approx(t.transactions / t.window_s)
    assert t.as_dict()["source"] == "pgbench -P progress lines"


def test_no_lines_no_totals() -> None:
    assert progress_totals.totals([]) is None
