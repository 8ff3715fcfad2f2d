"""Per-transaction logs: parsing, and the streaming summary, on real pgbench logs (14-18) and
small made-up ones.

Real logs: tests/fixtures/pgbench/<major>/<case>.txlog[.<thread>] (trimmed to the first lines per
thread, except tmode and paced which are whole; killed keeps a real torn last line). Every
figure is checked against an independent computation: a plain Python split of the lines and
numpy's exact quantiles.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pgrig.analysis import hdr
from pgrig.analysis.txlog import TxlogStream, TxlogSummary
from pgrig.analysis.txlog_parse import SCHEMA, UNKNOWN, complete_lines, parse_chunk, parse_lines
from pgrig.analysis.window import WindowPlan
from pgrig.errors import PgrigError
from pgrig.load.engines.pgbench_output import parse_summary

ROOT = Path(__file__).parents[1] / "fixtures" / "pgbench"
MAJORS = (14, 15, 16, 17, 18)
REL = 1e-3  # the bar for percentiles: 0.1% relative error (the histogram keeps 0.05%)
CASES = [  # (major, case, has_lag, has_retries) of every captured per-transaction log
    *[(m, "select_only", False, False) for m in MAJORS],
    *[(m, "multi", False, False) for m in MAJORS],
    *[(m, "tpcb", False, False) for m in (15, 18)],
    *[(m, "tmode", False, False) for m in (15, 18)],
    *[(m, "paced", True, False) for m in (15, 18)],
    *[(m, "rate", True, False) for m in (14, 15, 18)],
    *[(m, "retries", False, True) for m in (15, 16, 17, 18)],
    *[(m, "killed", False, False) for m in (15, 18)],
    *[(m, "aborted", False, False) for m in (14, 15, 18)],
]


def logs(major: int, case: str) -> list[Path]:
    return sorted((ROOT / str(major)).glob(f"{case}.txlog*"))


def raw_lines(paths: list[Path]) -> list[list[str]]:
    """The reference: a plain Python split of every complete line."""
    out = []
    for p in paths:
        text = p.read_text()
        complete = text[: text.rfind("\n") + 1]
        out += [line.split() for line in complete.splitlines()]
    return out


def read(paths: list[Path], *, has_lag: bool, has_retries: bool) -> pl.DataFrame:
    frames = [
        parse_lines(complete_lines(p.read_bytes())[0], has_lag=has_lag, has_retries=has_retries)
        for p in paths
    ]
    return pl.concat(frames) if frames else pl.DataFrame(schema=SCHEMA)


def end_us(r: list[str]) -> int:
    return int(r[4]) * 1_000_000 + int(r[5])


def first_start(ref: list[list[str]]) -> int:
    return min(end_us(r) - int(r[2]) for r in ref if r[2].isdigit())


def stream_of(
    paths: list[Path],
    *,
    has_lag: bool = False,
    has_retries: bool = False,
    plan: WindowPlan | None = None,
    origin_us: int | None = None,
    names: list[str] | None = None,
    chunk_lines: int | None = None,
    completed: bool = True,
) -> TxlogSummary:
    """Feed the files to a TxlogStream the way the reader does: chunks of complete lines, the
    threads' files interleaved. Default: a -t plan (the whole log), grid anchored just before
    the first transaction."""
    plan = plan or WindowPlan.for_run(0, None)
    if origin_us is None:
        origin_us = first_start(raw_lines(paths)) - 300_000
    s = TxlogStream(
        origin_us=origin_us,
        plan=plan,
        has_lag=has_lag,
        has_retries=has_retries,
        script_names=names or [],
        expected_sources=len(paths),
    )
    chunks = []
    for p in paths:
        lines = complete_lines(p.read_bytes())[0].splitlines(keepends=True)
        size = chunk_lines or max(1, len(lines))
        chunks.append([(p.name, b"".join(lines[i : i + size])) for i in range(0, len(lines), size)])
    for source, data in itertools.chain(*itertools.zip_longest(*chunks, fillvalue=("", b""))):
        if data:
            s.feed(data, source)
    res = s.finish(completed)
    assert res is not None
    return res


# --- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("major", MAJORS)
def test_read_select_only(major: int) -> None:
    paths = logs(major, "select_only")
    assert len(paths) == 2  # -j 2: <prefix>.<pid> and <prefix>.<pid>.1
    df = read(paths, has_lag=False, has_retries=False)
    ref = raw_lines(paths)
    assert df.schema == pl.Schema(SCHEMA)
    assert df.height == len(ref)
    assert df["status"].to_list() == ["ok"] * len(ref)
    assert df["latency_us"].to_list() == [int(r[2]) for r in ref]
    assert df["end_us"].to_list() == [end_us(r) for r in ref]
    assert df["client"].to_list() == [int(r[0]) for r in ref]
    assert set(df["script"].to_list()) == {0}
    assert df["lag_us"].null_count() == df["retries"].null_count() == df.height


@pytest.mark.parametrize(("major", "failure_words"), [
    (15, {"serialization", "deadlock"}),
    (17, {"serialization", "deadlock"}),
    (18, {"serialization", "deadlock"}),
    (16, {"failed"}),  # without --failures-detailed pgbench only says "failed"
])  # fmt: skip
def test_read_failures_and_retries(major: int, failure_words: set[str]) -> None:
    paths = logs(major, "retries")
    df = read(paths, has_lag=False, has_retries=True)
    ref = raw_lines(paths)
    words = {r[2] for r in ref if not r[2].isdigit()}
    assert words <= failure_words and words
    counts = dict(df["status"].value_counts().iter_rows())
    for w in words:
        assert counts[w] == sum(r[2] == w for r in ref)
    assert df.filter(pl.col("status") != "ok")["latency_us"].null_count() == sum(
        not r[2].isdigit() for r in ref
    )
    assert df["retries"].to_list() == [int(r[6]) for r in ref]
    assert set(df["script"].to_list()) == {0, 1}


@pytest.mark.parametrize("major", (14, 15, 18))
def test_read_skipped_with_lag(major: int) -> None:
    paths = logs(major, "rate")
    df = read(paths, has_lag=True, has_retries=False)
    ref = raw_lines(paths)
    assert (df["status"] == "skipped").sum() == sum(r[2] == "skipped" for r in ref) > 0
    assert df["lag_us"].to_list() == [int(r[6]) for r in ref]
    assert df.filter(pl.col("status") == "skipped")["latency_us"].null_count() == (
        (df["status"] == "skipped").sum()
    )


@pytest.mark.parametrize("major", (15, 18))
def test_torn_last_line_of_killed_pgbench(major: int) -> None:
    (path,) = logs(major, "killed")
    data = path.read_bytes()
    assert not data.endswith(b"\n")  # the real capture really is torn
    lines, rest = complete_lines(data)
    assert rest and rest not in lines
    df = parse_lines(lines, has_lag=False, has_retries=False)
    assert df.height == data.count(b"\n")
    last = data[: data.rfind(b"\n")].rsplit(b"\n", 1)[-1].split()
    assert df["end_us"][-1] == int(last[4]) * 1_000_000 + int(last[5])


def test_torn_line_inside_last_field_is_not_a_line() -> None:
    # "...1795240218 13" could be a complete line: only the missing newline tells it is torn
    lines, rest = complete_lines(b"0 1 100 0 1795240218 135000\n0 2 120 0 1795240218 13")
    assert rest == b"0 2 120 0 1795240218 13"
    df = parse_lines(lines, has_lag=False, has_retries=False)
    assert df["end_us"].to_list() == [1795240218135000]


def test_wrong_options_for_the_log() -> None:
    rate = complete_lines(logs(18, "rate")[0].read_bytes())[0]
    with pytest.raises(PgrigError, match=r"have 7 fields, expected 6 \(has_lag=False"):
        parse_lines(rate, has_lag=False, has_retries=False)
    bad = b"0 1 100 0 1795240218 1\n0 2 100 0 17952x0218 2\n"
    with pytest.raises(PgrigError, match="cannot parse pgbench log"):
        parse_lines(bad, has_lag=False, has_retries=False)


def test_empty_and_unknown_word() -> None:
    df = parse_lines(b"", has_lag=True, has_retries=True)
    assert df.height == 0 and df.schema == pl.Schema(SCHEMA)
    df = parse_lines(
        b"0 1 weird 0 1795240218 1\n0 2 100 0 1795240218 2\n", has_lag=False, has_retries=False
    )
    assert df["status"].to_list() == [None, "ok"]


@pytest.mark.parametrize(("major", "case", "has_lag", "has_retries"), CASES)
def test_chunk_columns_equal_the_frame(
    major: int, case: str, has_lag: bool, has_retries: bool
) -> None:
    """The stream's numpy columns (integer read for all-number chunks) say what parse_lines
    says, on every captured log."""
    for p in logs(major, case):
        data = complete_lines(p.read_bytes())[0]
        df = parse_lines(data, has_lag=has_lag, has_retries=has_retries)
        c = parse_chunk(data, has_lag=has_lag, has_retries=has_retries)
        codes = df["status"].to_physical().fill_null(UNKNOWN).to_list()
        assert c.code.tolist() == codes
        assert c.latency.tolist() == df["latency_us"].fill_null(0).to_list()
        assert c.script.tolist() == df["script"].to_list()
        assert c.end_us.tolist() == df["end_us"].to_list()
        assert (c.lag is not None) == has_lag and (c.retries is not None) == has_retries
        if c.lag is not None:
            assert c.lag.tolist() == df["lag_us"].to_list()
        if c.retries is not None:
            assert c.retries.tolist() == df["retries"].to_list()


def test_chunk_with_an_unknown_word_without_an_e() -> None:
    c = parse_chunk(
        b"0 1 odd 0 1795240218 1\n0 2 100 0 1795240218 2\n", has_lag=False, has_retries=False
    )
    assert c.code.tolist() == [UNKNOWN, 0] and c.latency.tolist() == [0, 100]
    with pytest.raises(PgrigError, match="cannot parse pgbench log"):
        parse_chunk(b"0 1 100 0 17952x0218 2\n", has_lag=False, has_retries=False)


# --- the stream on real logs: the same figures as an exact whole-file computation -------------


@pytest.mark.parametrize(("major", "case", "has_lag", "has_retries"), CASES)
def test_stream_equals_exact_whole_file_figures(
    major: int, case: str, has_lag: bool, has_retries: bool
) -> None:
    """Counts exact; mean, stddev, max, lag exact; percentiles within 0.1% of numpy's exact
    ones; per-second counts exact and per-second percentiles within 0.1%; whatever the
    chunking."""
    paths = logs(major, case)
    ref = raw_lines(paths)
    res = stream_of(paths, has_lag=has_lag, has_retries=has_retries, chunk_lines=23)
    ok = np.array([int(r[2]) for r in ref if r[2].isdigit()])
    assert res.lines == len(ref)
    assert res.transactions == ok.size
    assert res.failed == sum(r[2] in ("failed", "serialization", "deadlock") for r in ref)
    assert res.skipped == sum(r[2] == "skipped" for r in ref)
    if has_retries:
        assert res.retried == sum(int(r[6]) > 0 for r in ref)
        assert res.retries == sum(int(r[6]) for r in ref)
    lat = res.latency
    assert lat.avg == pytest.approx(ok.mean() / 1000, rel=1e-12)
    assert lat.stddev == pytest.approx(ok.std() / 1000, rel=1e-9)
    assert lat.max == ok.max() / 1000
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)):
        assert getattr(lat, name) == pytest.approx(np.quantile(ok, q) / 1000, rel=REL)
    if has_lag:
        lags = [int(r[6]) for r in ref if r[2].isdigit()]
        assert res.lag_avg_ms == pytest.approx(np.mean(lags) / 1000)
        assert res.lag_max_ms == max(lags) / 1000
    # per second: exact counts, percentiles within the bar, on the grid of the stream
    origin = first_start(ref) - 300_000
    sec = {t: [] for t in res.series["t"]}
    first = res.window.first_second
    for r in ref:
        sec.setdefault((end_us(r) - origin) // 1_000_000 - first, []).append(r[2])
    assert sorted(sec) == res.series["t"]
    for i, t in enumerate(res.series["t"]):
        words = sec[t]
        oks = [int(w) for w in words if w.isdigit()]
        assert res.series["failed"][i] == sum(
            w in ("failed", "serialization", "deadlock") for w in words
        )
        assert res.series["skipped"][i] == words.count("skipped")
        if oks:
            assert res.series["p95"][i] == pytest.approx(np.quantile(oks, 0.95) / 1000, rel=REL)
            assert res.series["max"][i] == max(oks) / 1000
        else:
            assert res.series["p95"][i] is None
    # the chunking does not matter
    whole = stream_of(paths, has_lag=has_lag, has_retries=has_retries)
    assert whole.latency.as_dict() == pytest.approx(res.latency.as_dict(), rel=1e-12)
    assert whole.series == res.series and whole.transactions == res.transactions
    assert [x.transactions for x in whole.scripts] == [x.transactions for x in res.scripts]


@pytest.mark.parametrize("major", (15, 18))
def test_whole_log_matches_pgbench_summary(major: int) -> None:
    """-t 50 -c 4: the log is complete, so it must agree with pgbench's own figures."""
    res = stream_of(logs(major, "tmode"), names=["pgbench:tpcb"])
    s = parse_summary((ROOT / str(major) / "tmode.stdout").read_text())
    assert res.transactions == s.processed == 200
    assert res.failed == res.skipped == 0 and res.retried is None
    assert round(res.latency.avg, 3) == s.latency_avg_ms
    assert round(res.latency.stddev, 3) == s.latency_stddev_ms  # population stddev, as pgbench
    assert [x.name for x in res.scripts] == ["pgbench:tpcb"]
    assert res.scripts[0].transactions == 200


@pytest.mark.parametrize("major", MAJORS)
def test_per_script_split(major: int) -> None:
    paths = logs(major, "multi")
    ref = raw_lines(paths)
    res = stream_of(paths, names=["upd", "read"], chunk_lines=50)
    assert [(x.script_no, x.name) for x in res.scripts] == [(0, "upd"), (1, "read")]
    for x in res.scripts:
        mine = [int(r[2]) for r in ref if int(r[3]) == x.script_no]
        assert x.transactions == len(mine)
        assert x.latency.avg == pytest.approx(np.mean(mine) / 1000)
        assert x.latency.p95 == pytest.approx(np.quantile(mine, 0.95) / 1000, rel=REL)
        assert x.latency.max == max(mine) / 1000
        assert x.tps == pytest.approx(len(mine) / res.window_s)
    assert sum(x.transactions for x in res.scripts) == res.transactions == len(ref)


@pytest.mark.parametrize("major", (15, 17, 18))
def test_failures_counted_by_kind(major: int) -> None:
    paths = logs(major, "retries")
    ref = raw_lines(paths)
    res = stream_of(paths, has_retries=True, names=["rr", "dl"], chunk_lines=7)
    assert res.serialization_failures == sum(r[2] == "serialization" for r in ref)
    assert res.deadlock_failures == sum(r[2] == "deadlock" for r in ref)
    assert res.failed == res.serialization_failures + res.deadlock_failures
    assert res.transactions == sum(r[2].isdigit() for r in ref)
    assert sum(x.failed for x in res.scripts) == res.failed
    assert sum(x.retried for x in res.scripts) == res.retried


def test_skipped_and_lag_in_window() -> None:
    paths = logs(18, "rate")
    ref = raw_lines(paths)
    res = stream_of(paths, has_lag=True, names=["s"])
    assert res.skipped == sum(r[2] == "skipped" for r in ref) > 0
    assert res.scripts[0].skipped == res.skipped


@pytest.mark.parametrize("major", (15, 18))
def test_window_on_real_log(major: int) -> None:
    """-R 120 -T 4, whole log, a plan of 2 s lead-in + 1 s window on a grid anchored 0.3 s
    before the first transaction: only transactions that END in the window count."""
    paths = logs(major, "paced")
    ref = raw_lines(paths)
    origin = first_start(ref) - 300_000
    plan = WindowPlan(lead_in_s=2, measured_s=1)
    res = stream_of(paths, has_lag=True, plan=plan, origin_us=origin, names=["s"])
    w0, w1 = origin + 2_000_000, origin + 3_000_000
    inside = [r for r in ref if w0 <= end_us(r) < w1]
    assert (res.window_start_us, res.window_end_us) == (w0, w1)
    assert 0 < res.transactions == len(inside) < len(ref)
    assert res.window_s == 1.0 and res.tps == len(inside)
    assert res.latency.p50 == pytest.approx(
        np.quantile([int(r[2]) for r in inside], 0.5) / 1000, rel=REL
    )
    # the series keeps the lead-in (t < 0) and stops at the end of the window
    assert res.series["t"] == [-2, -1, 0]
    assert res.series["tps"][-1] == len(inside)
    assert res.window.whole_seconds == 1
    assert res.whole_seconds == ([0.0], [float(len(inside))])


# --- the stream on made-up logs --------------------------------------------------------------

T0 = 1_700_000_000_000_000


def text(rows: list[tuple]) -> bytes:
    """rows: (client, latency_us or a word, script, end_us[, retries])."""
    out = []
    for r in rows:
        end = r[3]
        extra = f" {r[4]}" if len(r) > 4 else ""
        out.append(f"{r[0]} 1 {r[1]} {r[2]} {end // 1_000_000} {end % 1_000_000}{extra}\n")
    return "".join(out).encode()


def run(
    rows: list[tuple],
    plan: WindowPlan,
    origin: int = T0,
    names: tuple[str, ...] = (),
    completed: bool = True,
    has_retries: bool = False,
) -> TxlogSummary:
    s = TxlogStream(
        origin_us=origin,
        plan=plan,
        has_lag=False,
        has_retries=has_retries,
        script_names=list(names),
        expected_sources=1,
    )
    s.feed(text(rows), "t")
    res = s.finish(completed)
    assert res is not None
    return res


def test_warmup_excluded_from_every_figure() -> None:
    # lead-in 2 s (slow transactions and a failure), window 3 s
    warm = [(0, 50_000, 0, T0 + i * 100_000) for i in range(1, 20)]
    warm += [(0, "failed", 1, T0 + 1_500_000)]
    meas = [(1, 1_000 + i, 0, T0 + 2_000_000 + i * 10_000) for i in range(300)]
    meas += [(1, "skipped", 0, T0 + 2_500_000), (1, "deadlock", 1, T0 + 3_000_000)]
    res = run(warm + meas, WindowPlan(2, 3), names=("a", "b"))
    assert res.transactions == 300 and res.failed == 1 and res.skipped == 1
    assert res.deadlock_failures == 1 and res.serialization_failures == 0
    assert res.latency.max == pytest.approx(1.299) and res.latency.avg == pytest.approx(1.1495)
    assert res.tps == pytest.approx(100.0)
    assert res.scripts[1].transactions == 0 and res.scripts[1].failed == 1
    assert res.scripts[1].latency.p50 is None  # no ok transaction: nothing invented
    s = res.series
    assert s["t"] == [-2, -1, 0, 1, 2]  # a completed run: exactly the window's 3 seconds
    assert s["p99"][0] == pytest.approx(50.0, rel=REL)  # the warm-up is visible in the series
    assert s["failed"][s["t"].index(-1)] == 1 and s["failed"][s["t"].index(1)] == 1
    assert s["skipped"][s["t"].index(0)] == 1


def test_drain_after_the_window_is_not_measured_nor_charted() -> None:
    rows = [(0, 900_000, 0, T0 + 1_000_000 + i * 1000) for i in range(1000)]  # in the window
    rows += [(0, 900_000, 0, T0 + 3_000_000 + i * 1000) for i in range(10)]  # drain
    res = run(rows, WindowPlan(1, 2))
    assert res.transactions == 1000 and res.window.whole_seconds == 2
    assert res.series["t"] == [-1, 0, 1] and res.series["tps"][1:] == [1000.0, 0.0]
    assert res.window.measured_s == 2.0


def test_exact_quantiles_match_numpy() -> None:
    rng = np.random.default_rng(3)
    lat = rng.lognormal(7, 1, 5000).astype(int) + 1
    rows = [(0, int(v), i % 3, T0 + 1_000_000 + i * 200) for i, v in enumerate(lat)]
    res = run(rows, WindowPlan(1, 10))
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)):
        assert getattr(res.latency, name) == pytest.approx(np.quantile(lat, q) / 1000, rel=REL)
    assert res.latency.stddev == pytest.approx(np.std(lat) / 1000)
    assert [x.name for x in res.scripts] == ["script 0", "script 1", "script 2"]
    part = lat[1::3]
    assert res.scripts[1].latency.p99 == pytest.approx(np.quantile(part, 0.99) / 1000, rel=REL)


def test_small_latencies_are_exact() -> None:
    lat = np.arange(1, 2048)  # below 2,048 us every value has its own bucket
    rows = [(0, int(v), 0, T0 + 1_000_000 + i) for i, v in enumerate(lat)]
    res = run(rows, WindowPlan(1, 1))
    assert res.latency.p95 == np.quantile(lat, 0.95) / 1000
    assert res.latency.p50 == np.quantile(lat, 0.5) / 1000


def test_series_fills_stalls_with_zero() -> None:
    rows = [(0, 100, 0, T0 + 900_000), (0, 100, 0, T0 + 1_100_000), (0, 100, 0, T0 + 4_500_000)]
    res = run(rows, WindowPlan(1, 4))
    s = res.series
    assert s["t"] == [-1, 0, 1, 2, 3]
    assert s["tps"][2:4] == [0.0, 0.0] and s["p95"][2:4] == [None, None]
    assert s["max"][1] == 0.1


def test_partial_first_second_divided_by_covered_time() -> None:
    # -t run from T0+0.5s (first start) to T0+2.0s: its first grid second is half covered
    rows = [(0, 500_000, 0, T0 + 1_000_000 - 1)]
    rows += [(0, 100, 0, T0 + 1_000_000 + i * 10_000) for i in range(100)]
    res = run(rows, WindowPlan.for_run(0, None))
    assert res.series["t"] == [-1, 0]
    assert res.series["tps"][0] == pytest.approx(1 / 0.500001)
    assert res.series["tps"][1] == pytest.approx(100 / 0.990001)
    assert res.window.whole_seconds == 0  # [T0+1s, T0+2s) is not whole: the run ended before


def test_window_boundaries_half_open() -> None:
    rows = [
        (0, 10, 0, T0 + 1_000_000),
        (0, 10, 0, T0 + 1_999_999),
        (0, 10, 0, T0 + 2_000_000),
    ]
    assert run(rows, WindowPlan(1, 1)).transactions == 2


def test_late_start_shortens_the_window_to_whole_seconds() -> None:
    """Clients connected for 2.4 s with a 1 s lead-in: the first transaction starts at 2.4 s,
    so the window starts at 3 s (the first whole second) and lasts 2 of the planned 4 s...
    plus nothing of the partial second 2."""
    rows = [(0, 100_000, 0, T0 + 2_500_000 + i * 1000) for i in range(400)]  # ends 2.5-2.9 s
    rows += [(0, 1000, 0, T0 + 3_000_000 + i * 1000) for i in range(2000)]  # 3.0-5.0 s
    res = run(rows, WindowPlan(1, 4))
    assert res.window.late_start_s == 2 and res.window.start_us == T0 + 3_000_000
    assert res.transactions == 2000 and res.window.measured_s == 2.0
    assert res.window.whole_seconds == 2
    assert res.series["t"][0] == -1 and res.series["t"][-1] == 1


def test_cut_short_run_keeps_its_partial_series_but_not_for_statistics() -> None:
    rows = [(0, 1000, 0, T0 + 1_000_000 + i * 1000) for i in range(2500)]  # to 3.5 s
    res = run(rows, WindowPlan(1, 10), completed=False)
    assert res.window.measured_s == pytest.approx(2.499001)
    assert res.series["t"] == [-1, 0, 1, 2]  # from the second holding the first start
    assert res.series["tps"][3] == pytest.approx(500 / 0.5)
    assert res.window.whole_seconds == 2
    assert res.whole_seconds == ([0.0, 1.0], [1000.0, 1000.0])


def test_aborted_during_the_lead_in() -> None:
    res = run([(0, 10, 0, T0 + 100)], WindowPlan(5, 10), completed=False)
    assert res.transactions == 0 and res.window.measured_s == 0.0
    assert res.series["t"] == [-5] and res.scripts == []
    s = TxlogStream(origin_us=T0, plan=WindowPlan(1, 1), has_lag=False, has_retries=False)
    assert s.finish(False) is None  # nothing logged at all


def test_retries_without_column_are_none() -> None:
    res = run([(0, 10, 0, T0 + 500), (0, 10, 0, T0 + 1_000_100)], WindowPlan(1, 1))
    assert res.retried is None and res.retries is None
    rows = [(0, 10, 0, T0 + 500, 0), (0, 10, 0, T0 + 1_000_100, 2)]
    res = run(rows, WindowPlan(1, 1), has_retries=True)
    assert res.retried == 1 and res.retries == 2


def test_live_figures_are_the_latest_closed_second() -> None:
    s = TxlogStream(
        origin_us=T0, plan=WindowPlan(1, 10), has_lag=False, has_retries=False, expected_sources=2
    )
    assert s.live() == (None, None)
    s.feed(text([(0, 1000 + i, 0, T0 + i * 10_000) for i in range(200)]), "a")  # 0-2 s
    assert s.live() == (None, None)  # the second thread has not written yet: nothing closed
    s.feed(text([(1, 5000, 0, T0 + 1_500_000)]), "b")
    # both threads wrote past second 0 (not past second 1): second 0 is closed
    lat0 = [1000 + i for i in range(100)]
    assert s.live() == (100.0, pytest.approx(np.quantile(lat0, 0.95) / 1000, rel=REL))


# --- histogram -------------------------------------------------------------------------------


def test_histogram_relative_error_bound() -> None:
    rng = np.random.default_rng(1)
    v = np.concatenate([np.arange(0, 100_000), rng.integers(0, 2**45, 100_000)])
    idx = hdr.bucket_index(v)
    rep = hdr.bucket_value(idx)
    assert np.all(np.abs(rep - v) <= np.maximum(v, 1) * hdr.RELATIVE_ERROR)
    assert np.array_equal(rep[:2048], np.arange(2048))  # exact below 2,048 us
    u = np.unique(hdr.bucket_index(np.arange(0, 1 << 18)))
    assert np.array_equal(u, np.arange(u.size))  # contiguous, monotonic
    assert hdr.quantiles(np.zeros(3, np.int64), {"p50": 0.5}) == {"p50": None}
