"""Reading sysbench 1.0.20's output (captured from real runs, tests/fixtures/sysbench/) and the
sysbench request rules.

oltp_read_only_checkpoint.out: a terminal run with --report-checkpoints=1 (clean order).
oltp_read_write_interleaved.out: a pgrig run (stdout piped): the reporting thread's lines
fall inside the checkpoint's statistics block.
tpcc_report_cut_by_the_end.out: the stand-in of sysbench-tpcc (tests/fixtures/sysbench/
tpcc_shape), 8 runs at once: its Lua report hook's last line was cut before its newline, so
the histogram's header follows it on the same line.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pgrig.analysis import quantile_bounds
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.load.engines import sysbench_output
from pgrig.load.engines.sysbench_driver import _series, _window_figures
from pgrig.request import RunRequest, from_flags
from pgrig.views import latency
from pgrig.workloads import sysbench

FIXTURES = Path(__file__).parents[1] / "fixtures" / "sysbench"


def _read(name: str) -> sysbench_output.Output:
    return sysbench_output.parse((FIXTURES / name).read_text())


def test_checkpoint_and_final_blocks_are_told_apart() -> None:
    out = _read("oltp_read_only_checkpoint.out")
    assert out.checkpoint is not None and out.checkpoint.transactions == 672
    assert out.final is not None and out.final.transactions == 2691
    assert out.final.tps == 894.71 and out.final.lat_pct == 95.0
    # the histogram is the window's only: reset at the checkpoint
    assert sum(c for _v, c in out.histogram) == 2691
    assert [r.elapsed_s for r in out.intervals] == [1, 2, 3, 4]


def test_interleaved_lines_do_not_break_the_blocks() -> None:
    out = _read("oltp_read_write_interleaved.out")
    assert out.checkpoint is not None and out.checkpoint.transactions == 361
    assert out.final is not None and out.final.transactions == 746
    assert out.final.ignored_errors == 5
    assert sum(c for _v, c in out.histogram) == 746
    assert len(out.intervals) == 4 and out.intervals[0].tps == 360.60


def test_a_report_cut_before_its_newline_keeps_the_histogram_and_its_figures() -> None:
    out = _read("tpcc_report_cut_by_the_end.out")
    assert out.final is not None and out.final.transactions == 104
    assert sum(c for _v, c in out.histogram) == 104
    # sysbench.report_default (Lua) prints "err/s N" where sysbench's own C report has "err/s:"
    assert [(r.elapsed_s, r.tps, r.errors_per_s) for r in out.intervals] == [
        (1, 151.73, 602.99), (2, 103.90, 506.38),
    ]  # fmt: skip


def test_every_header_glued_to_the_line_before_is_read_as_on_its_own() -> None:
    """Lua's print writes a line's newline apart: any header may follow a line's text."""
    text = (FIXTURES / "oltp_read_only_checkpoint.out").read_text()
    heads = ["[ 1s ] Checkpoint report:", "SQL statistics:", "General statistics:",
             "Latency histogram"]  # fmt: skip
    glued = text
    for head in heads:
        assert "\n" + head in glued
        glued = glued.replace("\n" + head, " err/s 0.00 reconn/s: 0.00" + head)
    assert sysbench_output.parse(glued) == sysbench_output.parse(text)


@pytest.mark.parametrize(
    "name",
    [
        "oltp_read_only_checkpoint.out",
        "oltp_read_write_interleaved.out",
        "tpcc_report_cut_by_the_end.out",
    ],
)
def test_p95_from_the_histogram_is_sysbenchs_own(name: str) -> None:
    out = _read(name)
    assert out.final is not None and out.final.lat_pct_ms is not None
    ours = sysbench_output.percentile(out.histogram, 0.95)
    assert ours == pytest.approx(out.final.lat_pct_ms, abs=0.006)


def test_bucket_layout_matches_the_printed_values() -> None:
    out = _read("oltp_read_only_checkpoint.out")
    values = [v for v, _c in out.histogram]
    # every printed value is exp(i / m) * 0.001 ms for an integer bucket index i
    for v in values:
        i = sysbench_output.HIST_MULT * math.log(v / sysbench_output.HIST_MIN_MS)
        assert abs(i - round(i)) < 0.1
    assert abs(sysbench_output.BUCKET_HALF_WIDTH - 0.0090) < 0.0001


def test_window_figures_and_bounds() -> None:
    out = _read("oltp_read_write_interleaved.out")
    assert out.final is not None
    rec = RunRecord(env_name="e", workload="sysbench:oltp_read_write", clients=2, threads=1)
    _window_figures(rec, out.final, out.histogram, "sysbench:oltp_read_write")
    assert rec.transactions == 746 and rec.tps == 247.03 and rec.retried == 5
    assert rec.measured_s == pytest.approx(746 / 247.03, abs=0.001)
    assert rec.latency.avg == 8.07 and rec.latency.max == 31.74
    basis = rec.extra["latency_basis"]
    assert basis["samples"] == 746 and basis["check"]["agrees"]
    for key in ("p50", "p90", "p95", "p99"):
        lo, hi = basis["bounds"][key]
        assert lo <= getattr(rec.latency, key) <= hi
    assert basis["bounds"]["p999"][1] is None  # 746 samples cannot bound p99.9 from above


def test_a_histogram_short_of_the_counter_is_every_transaction_not_a_sample() -> None:
    """sysbench resets its counter and its histogram a moment apart at the checkpoint (CI saw
    1,555 in the histogram against 1,558 counted): the percentiles still rest on every
    transaction of the window, and no surface may call them sampled."""
    out = _read("oltp_read_write_interleaved.out")
    assert out.final is not None
    out.final.transactions = 749  # three ended between the two resets
    rec = RunRecord(env_name="e", workload="sysbench:oltp_read_write", clients=2, threads=1)
    _window_figures(rec, out.final, out.histogram, "sysbench:oltp_read_write")
    basis = latency.of(rec)
    assert basis is not None and not basis.sampled
    assert basis.rests_on.startswith("746 samples, every transaction of the window")
    assert "749" in basis.rests_on and "sampled" not in basis.rests_on
    # a run archived before the engine said so: its source tells
    doc = dict(rec.extra["latency_basis"])
    del doc["sampled"], doc["rests_on"]
    rec.extra["latency_basis"] = doc
    old = latency.of(rec)
    assert old is not None and not old.sampled and "sampled" not in old.rests_on


def test_series_starts_each_second_at_its_beginning() -> None:
    out = _read("oltp_read_write_interleaved.out")
    series = _series(out.intervals, lead_in_s=1)
    assert series["t"] == [-1.0, 0.0, 1.0, 2.0]


def test_rank_bounds_are_the_binomial_points() -> None:
    r = quantile_bounds.rank_bounds(100, 0.5)
    assert (r.lower, r.upper) == (40, 61)  # the classic 95% interval for the median of 100
    assert quantile_bounds.rank_bounds(10, 0.99).upper is None


def test_command_has_no_connection_parameters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sysbench, "binary", lambda: "/usr/bin/sysbench")
    from pgrig.load.engines.sysbench_driver import SysbenchDriver

    if not (sysbench.BUNDLED_DIR / "oltp_read_write.lua").is_file():
        pytest.skip("sysbench's Lua scripts are not installed")
    spec = RunRequest(
        env_name="e", workload="sysbench:oltp_read_write", clients=4, duration_s=10, warmup_s=2,
        defines={"range_size": "50"},
    )  # fmt: skip
    driver = SysbenchDriver(spec, {"PGPASSWORD": "secret"}, {"scenario": "sysbench",
                            "tables": 3, "table_size": 500})  # fmt: skip
    argv = driver.command()
    assert "--pgsql-host=" in argv and "--pgsql-user=" in argv and "--pgsql-db=" in argv
    assert not any("secret" in a or "password" in a for a in argv)
    assert "--time=12" in argv and "--report-checkpoints=2" in argv and "--threads=4" in argv
    assert argv[-4:] == ["--tables=3", "--table-size=500", "--range-size=50", "run"]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        ({"threads": 2, "clients": 2}, "one thread per client"),
        ({"transactions_per_client": 10, "duration_s": None}, "timed"),
        ({"protocol": "extended"}, "extended is not available"),
        ({"max_tries": 3}, "retries deadlocks"),
    ],
)
def test_sysbench_refuses_what_it_cannot_do(flags: dict, says: str) -> None:
    base = {"env_name": "e", "workload": "sysbench:oltp_read_only", "duration_s": 5}
    with pytest.raises(PgrigError, match=says):
        from_flags(RunRequest, **{**base, **flags})


def test_unknown_test_is_named() -> None:
    with pytest.raises(PgrigError, match="unknown sysbench test 'oltp_nope'"):
        sysbench.script_path("sysbench:oltp_nope")


def test_csv_reports_are_per_second_reports() -> None:
    """sysbench.report_csv (sysbench-tpcc's --report-csv=yes; captured from sysbench 1.0.20):
    time, threads, tps, qps, r/w/o per s, the percentile (ms), errors/s, reconnects/s."""
    r = sysbench_output.parse_interval("2,4,45.02,180.08,0.00,0.00,0.00,1.05,0.50,0.00")
    assert r is not None and (r.elapsed_s, r.threads, r.tps, r.qps) == (2, 4, 45.02, 180.08)
    assert (r.lat_pct, r.errors_per_s) == (1.05, 0.5)
    assert sysbench_output.parse_interval("1,2,3") is None
    assert sysbench_output.parse_interval("    total time:    2.0122s") is None


def test_the_load_hosts_outputs_merge() -> None:
    """Two hosts' outputs: counts and rates add, histograms add bucket by bucket, the average
    is over every event, no percentile is made up by adding."""
    a = _read("oltp_read_only_checkpoint.out")
    b = _read("oltp_read_write_interleaved.out")
    merged = sysbench_output.merge({"h2": a, "h3": b})
    assert a.final is not None and b.final is not None and merged.final is not None
    assert merged.final.transactions == a.final.transactions + b.final.transactions
    assert merged.final.tps == pytest.approx(a.final.tps + b.final.tps)
    assert merged.final.lat_pct_ms is None and merged.final.lat_pct == a.final.lat_pct
    assert merged.final.lat_max_ms == max(a.final.lat_max_ms, b.final.lat_max_ms)
    assert a.final.lat_sum_ms is not None and b.final.lat_sum_ms is not None
    events = (a.final.events or 0) + (b.final.events or 0)
    assert merged.final.lat_avg_ms == pytest.approx(
        (a.final.lat_sum_ms + b.final.lat_sum_ms) / events, abs=0.001
    )
    assert sum(c for _v, c in merged.histogram) == sum(c for _v, c in a.histogram) + sum(
        c for _v, c in b.histogram
    )
    first = {r.elapsed_s: r for r in a.intervals}[1]
    other = {r.elapsed_s: r for r in b.intervals}[1]
    one = {r.elapsed_s: r for r in merged.intervals}[1]
    assert one.tps == pytest.approx(first.tps + other.tps) and one.lat_pct is None
    assert merged.parts == {"h2": a, "h3": b}
    # a host stopped before its final report: the run has no final figures
    stopped = sysbench_output.Output(intervals=a.intervals, checkpoint=a.checkpoint)
    assert sysbench_output.merge({"h2": a, "h3": stopped}).final is None


def test_a_merged_runs_percentile_check_is_each_hosts_own() -> None:
    a = _read("oltp_read_only_checkpoint.out")
    b = _read("oltp_read_write_interleaved.out")
    merged = sysbench_output.merge({"h2": a, "h3": b})
    rec = RunRecord(env_name="e", workload="sysbench:oltp_read_only", clients=2, threads=1)
    assert merged.final is not None
    _window_figures(rec, merged.final, merged.histogram, "sysbench:oltp_read_only", merged.parts)
    check = rec.extra["latency_basis"]["check"]
    assert set(check["hosts"]) == {"h2", "h3"} and check["agrees"] is True
    assert check["sysbench_ms"] is None and check["from_histogram_ms"] is not None
