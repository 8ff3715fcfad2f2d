"""Per-transaction log reading and summarising, on real pgbench logs (14-18) and small made-up ones.

Real logs: tests/fixtures/pgbench/<major>/<case>.txlog[.<thread>] (trimmed to the first lines per
thread, except tmode and paced which are whole; killed keeps a real torn last line).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pgrig.analysis.txlog import (
    SCHEMA,
    LiveTail,
    infer_start_us,
    read_txlogs,
    summarize,
)
from pgrig.errors import PgrigError
from pgrig.load.pgbench_output import parse_summary

ROOT = Path(__file__).parents[1] / "fixtures" / "pgbench"
MAJORS = (14, 15, 16, 17, 18)


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


def whole_window(df: pl.DataFrame) -> tuple[int, int]:
    return infer_start_us(df), int(df["end_us"].max()) + 1


# --- reading ---------------------------------------------------------------------------------


@pytest.mark.parametrize("major", MAJORS)
def test_read_select_only(major: int) -> None:
    paths = logs(major, "select_only")
    assert len(paths) == 2  # -j 2: <prefix>.<pid> and <prefix>.<pid>.1
    df = read_txlogs(paths, has_lag=False, has_retries=False)
    ref = raw_lines(paths)
    assert df.schema == pl.Schema(SCHEMA)
    assert df.height == len(ref)
    assert df["status"].to_list() == ["ok"] * len(ref)
    assert df["latency_us"].to_list() == [int(r[2]) for r in ref]
    assert df["end_us"].to_list() == [int(r[4]) * 1_000_000 + int(r[5]) for r in ref]
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
    df = read_txlogs(paths, has_lag=False, has_retries=True)
    ref = raw_lines(paths)
    words = {r[2] for r in ref if not r[2].isdigit()}
    assert words <= failure_words and words
    counts = dict(df["status"].value_counts().iter_rows())
    for w in words:
        assert counts[w] == sum(r[2] == w for r in ref)
    assert df.filter(pl.col("status") != "ok")["latency_us"].null_count() == sum(
        not r[2].isdigit() for r in ref
    )
    assert df["retries"].to_list() == [int(r[7 - 1]) for r in ref]
    assert set(df["script"].to_list()) == {0, 1}


@pytest.mark.parametrize("major", (14, 15, 18))
def test_read_skipped_with_lag(major: int) -> None:
    paths = logs(major, "rate")
    df = read_txlogs(paths, has_lag=True, has_retries=False)
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
    df = read_txlogs([path], has_lag=False, has_retries=False)
    assert df.height == data.count(b"\n")
    last = data[: data.rfind(b"\n")].rsplit(b"\n", 1)[-1].split()
    assert df["end_us"][-1] == int(last[4]) * 1_000_000 + int(last[5])


def test_torn_line_inside_last_field_is_dropped(tmp_path: Path) -> None:
    # "...1795240218 13" could be a complete line: only the missing newline tells it is torn
    p = tmp_path / "t.1"
    p.write_text("0 1 100 0 1795240218 135000\n0 2 120 0 1795240218 13")
    df = read_txlogs([p], has_lag=False, has_retries=False)
    assert df["end_us"].to_list() == [1795240218135000]


def test_gzip_logs_read_the_same(tmp_path: Path) -> None:
    plain = logs(18, "retries")
    gz = []
    for p in plain:
        q = tmp_path / (p.name + ".gz")
        with open(p, "rb") as src, gzip.open(q, "wb") as dst:
            shutil.copyfileobj(src, dst)
        gz.append(q)
    a = read_txlogs(plain, has_lag=False, has_retries=True)
    b = read_txlogs(gz, has_lag=False, has_retries=True)
    assert a.equals(b)
    # a torn gzip'ed log is handled like a torn plain one
    (killed,) = logs(18, "killed")
    q = tmp_path / "killed.gz"
    q.write_bytes(gzip.compress(killed.read_bytes()))
    assert read_txlogs([q], has_lag=False, has_retries=False).equals(
        read_txlogs([killed], has_lag=False, has_retries=False)
    )


def test_wrong_options_for_the_log(tmp_path: Path) -> None:
    with pytest.raises(PgrigError, match=r"have 7 fields, expected 6 \(has_lag=False"):
        read_txlogs(logs(18, "rate"), has_lag=False, has_retries=False)
    with pytest.raises(PgrigError, match="pgbench log not found"):
        read_txlogs([tmp_path / "nope"], has_lag=False, has_retries=False)
    bad = tmp_path / "bad.1"
    bad.write_text("0 1 100 0 1795240218 1\n0 2 100 0 17952x0218 2\n")
    with pytest.raises(PgrigError, match="cannot parse pgbench log"):
        read_txlogs([bad], has_lag=False, has_retries=False)


def test_empty_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "e.1"
    empty.write_bytes(b"")
    torn_only = tmp_path / "e.2"
    torn_only.write_bytes(b"0 1 10")
    for paths in ([], [empty], [empty, torn_only]):
        df = read_txlogs(paths, has_lag=True, has_retries=True)
        assert df.height == 0 and df.schema == pl.Schema(SCHEMA)
    with pytest.raises(PgrigError, match="no transactions"):
        infer_start_us(read_txlogs([], has_lag=False, has_retries=False))


def test_unknown_word_is_not_ok(tmp_path: Path) -> None:
    p = tmp_path / "u.1"
    p.write_text("0 1 weird 0 1795240218 1\n0 2 100 0 1795240218 2\n")
    df = read_txlogs([p], has_lag=False, has_retries=False)
    assert df["status"].to_list() == [None, "ok"]


# --- summarize on real logs ------------------------------------------------------------------


@pytest.mark.parametrize("major", (15, 18))
def test_whole_log_matches_pgbench_summary(major: int) -> None:
    """-t 50 -c 4: the log is complete, so it must agree with pgbench's own figures."""
    df = read_txlogs(logs(major, "tmode"), has_lag=False, has_retries=False)
    s = parse_summary((ROOT / str(major) / "tmode.stdout").read_text())
    w0, w1 = whole_window(df)
    res = summarize(df, window_start_us=w0, window_end_us=w1, script_names=["pgbench:tpcb"])
    assert res.transactions == s.processed == 200
    assert res.failed == res.skipped == 0 and res.retried is None
    assert round(res.latency.avg, 3) == s.latency_avg_ms
    assert round(res.latency.stddev, 3) == s.latency_stddev_ms  # population stddev, as pgbench
    assert [x.name for x in res.scripts] == ["pgbench:tpcb"]
    assert res.scripts[0].transactions == 200
    assert sum(res.series["tps"]) >= 0 and res.series["t"][0] == 0


@pytest.mark.parametrize("major", MAJORS)
def test_per_script_split(major: int) -> None:
    paths = logs(major, "multi")
    df = read_txlogs(paths, has_lag=False, has_retries=False)
    ref = raw_lines(paths)
    w0, w1 = whole_window(df)
    res = summarize(df, window_start_us=w0, window_end_us=w1, script_names=["upd", "read"])
    assert [(x.script_no, x.name) for x in res.scripts] == [(0, "upd"), (1, "read")]
    for x in res.scripts:
        mine = [int(r[2]) for r in ref if int(r[3]) == x.script_no]
        assert x.transactions == len(mine)
        assert x.latency.avg == pytest.approx(np.mean(mine) / 1000)
        assert x.latency.p95 == pytest.approx(np.quantile(mine, 0.95) / 1000)
        assert x.latency.max == max(mine) / 1000
        assert x.tps == pytest.approx(len(mine) / res.window_s)
    assert sum(x.transactions for x in res.scripts) == res.transactions == len(ref)


@pytest.mark.parametrize("major", (15, 17, 18))
def test_failures_counted_by_kind(major: int) -> None:
    paths = logs(major, "retries")
    df = read_txlogs(paths, has_lag=False, has_retries=True)
    ref = raw_lines(paths)
    w0, w1 = whole_window(df)
    res = summarize(df, window_start_us=w0, window_end_us=w1, script_names=["rr", "dl"])
    assert res.serialization_failures == sum(r[2] == "serialization" for r in ref)
    assert res.deadlock_failures == sum(r[2] == "deadlock" for r in ref)
    assert res.failed == res.serialization_failures + res.deadlock_failures
    assert res.transactions == sum(r[2].isdigit() for r in ref)
    assert res.retried == sum(int(r[6]) > 0 for r in ref)
    assert res.retries == sum(int(r[6]) for r in ref)
    assert sum(x.failed for x in res.scripts) == res.failed
    assert sum(x.retried for x in res.scripts) == res.retried


def test_skipped_and_lag_in_window() -> None:
    paths = logs(18, "rate")
    df = read_txlogs(paths, has_lag=True, has_retries=False)
    ref = raw_lines(paths)
    w0, w1 = whole_window(df)
    res = summarize(df, window_start_us=w0, window_end_us=w1, script_names=["s"])
    assert res.skipped == sum(r[2] == "skipped" for r in ref) > 0
    ok_lag = [int(r[6]) for r in ref if r[2].isdigit()]
    assert res.lag_avg_ms == pytest.approx(np.mean(ok_lag) / 1000)
    assert res.lag_max_ms == max(ok_lag) / 1000
    assert res.scripts[0].skipped == res.skipped


@pytest.mark.parametrize("major", (15, 18))
def test_window_excludes_warmup_on_real_log(major: int) -> None:
    """-R 120 -T 4, whole log: only transactions that END in the window count."""
    paths = logs(major, "paced")
    df = read_txlogs(paths, has_lag=True, has_retries=False)
    ref = raw_lines(paths)
    start = infer_start_us(df)
    assert start == min(int(r[4]) * 10**6 + int(r[5]) - int(r[2]) for r in ref)
    w0, w1 = start + 2_000_000, start + 3_000_000
    res = summarize(df, window_start_us=w0, window_end_us=w1, script_names=["s"])
    inside = [r for r in ref if w0 <= int(r[4]) * 10**6 + int(r[5]) < w1]
    assert 0 < res.transactions == len(inside) < len(ref)
    assert res.window_s == 1.0 and res.tps == len(inside)
    assert res.latency.p50 == pytest.approx(np.quantile([int(r[2]) for r in inside], 0.5) / 1000)
    # the series still covers everything, warm-up (t < 0) included, relative to w0
    t = res.series["t"]
    assert t[0] == -2 and t == list(range(t[0], t[-1] + 1))
    assert res.series["tps"][t.index(0)] == len(inside)


# --- summarize on made-up logs ---------------------------------------------------------------


def frame(rows: list[tuple]) -> pl.DataFrame:
    """rows: (client, latency_us or None, status, script, end_us[, retries])."""
    data = {
        "client": [r[0] for r in rows],
        "latency_us": [r[1] for r in rows],
        "status": [r[2] for r in rows],
        "script": [r[3] for r in rows],
        "end_us": [r[4] for r in rows],
        "lag_us": [None] * len(rows),
        "retries": [r[5] if len(r) > 5 else None for r in rows],
    }
    return pl.DataFrame(data, schema=SCHEMA)


T0 = 1_700_000_000_000_000


def test_warmup_excluded_from_every_figure() -> None:
    warm = [(0, 50_000, "ok", 0, T0 + i * 100_000) for i in range(1, 20)]  # slow, first 2 s
    warm += [(0, None, "failed", 1, T0 + 1_500_000)]
    meas = [(1, 1_000 + i, "ok", 0, T0 + 2_000_000 + i * 10_000) for i in range(300)]
    meas += [(1, None, "skipped", 0, T0 + 2_500_000), (1, None, "deadlock", 1, T0 + 3_000_000)]
    df = frame(warm + meas)
    res = summarize(
        df, window_start_us=T0 + 2_000_000, window_end_us=T0 + 5_000_000, script_names=["a", "b"]
    )
    assert res.transactions == 300 and res.failed == 1 and res.skipped == 1
    assert res.deadlock_failures == 1 and res.serialization_failures == 0
    assert res.latency.max == pytest.approx(1.299) and res.latency.avg == pytest.approx(1.1495)
    assert res.tps == pytest.approx(100.0)
    assert res.scripts[1].transactions == 0 and res.scripts[1].failed == 1
    assert res.scripts[1].latency.p50 is None  # no ok transaction: nothing invented
    s = res.series
    assert s["t"][:2] == [-2, -1]
    assert s["p99"][0] == pytest.approx(50.0)  # the warm-up is visible in the series
    assert s["failed"][s["t"].index(-1)] == 1 and s["failed"][s["t"].index(1)] == 1
    assert s["skipped"][s["t"].index(0)] == 1


def test_exact_quantiles_match_numpy() -> None:
    rng = np.random.default_rng(3)
    lat = rng.lognormal(7, 1, 5000).astype(int) + 1
    rows = [(0, int(v), "ok", i % 3, T0 + i * 200) for i, v in enumerate(lat)]
    res = summarize(frame(rows), window_start_us=T0, window_end_us=T0 + 10**7, script_names=[])
    for name, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99), ("p999", 0.999)):
        assert getattr(res.latency, name) == pytest.approx(np.quantile(lat, q) / 1000, rel=1e-12)
    assert res.latency.stddev == pytest.approx(np.std(lat) / 1000)
    assert [x.name for x in res.scripts] == ["script 0", "script 1", "script 2"]
    part = lat[1::3]
    assert res.scripts[1].latency.p99 == pytest.approx(np.quantile(part, 0.99) / 1000)


def test_series_fills_stalls_with_zero() -> None:
    rows = [(0, 100, "ok", 0, T0 + 100_000), (0, 100, "ok", 0, T0 + 3_500_000)]
    res = summarize(
        frame(rows), window_start_us=T0, window_end_us=T0 + 4_000_000, script_names=["a"]
    )
    s = res.series
    assert s["t"] == [0, 1, 2, 3]
    assert s["tps"][1:3] == [0.0, 0.0] and s["p95"][1:3] == [None, None]
    assert s["max"][0] == 0.1


def test_edge_buckets_divided_by_covered_time() -> None:
    # run from T0+0.5s to T0+2.0s: bucket 0 is half covered
    rows = [(0, 500_000, "ok", 0, T0 + 1_000_000 - 1)]
    rows += [(0, 100, "ok", 0, T0 + 1_000_000 + i * 10_000) for i in range(100)]
    res = summarize(frame(rows), window_start_us=T0, window_end_us=T0 + 2_000_000, script_names=[])
    assert res.series["t"] == [0, 1]
    assert res.series["tps"][0] == pytest.approx(1 / 0.500001)
    assert res.series["tps"][1] == pytest.approx(100 / 0.990001)


def test_window_boundaries_half_open() -> None:
    rows = [(0, 10, "ok", 0, T0), (0, 10, "ok", 0, T0 + 999_999), (0, 10, "ok", 0, T0 + 1_000_000)]
    res = summarize(frame(rows), window_start_us=T0, window_end_us=T0 + 1_000_000, script_names=[])
    assert res.transactions == 2


def test_empty_window_and_bad_window() -> None:
    df = frame([(0, 10, "ok", 0, T0)])
    res = summarize(df, window_start_us=T0 + 10, window_end_us=T0 + 20, script_names=["a"])
    assert res.transactions == 0 and res.tps == 0.0 and res.latency.avg is None
    assert res.scripts[0].latency.max is None
    with pytest.raises(PgrigError, match="measurement window ends before it starts"):
        summarize(df, window_start_us=T0, window_end_us=T0 - 1, script_names=[])
    # aborted during the warm-up: nothing measured, no rate invented, the series still there
    res = summarize(df, window_start_us=T0 + 5, window_end_us=T0 + 5, script_names=["a"])
    assert res.transactions == 0 and res.tps is None and res.scripts[0].tps is None
    assert res.series["t"] == [-1] and res.series["tps"] == [2.0]  # 1 tx / 0.5 s floor
    empty = read_txlogs([], has_lag=False, has_retries=False)
    res = summarize(empty, window_start_us=T0, window_end_us=T0 + 1, script_names=["a"])
    assert res.transactions == 0 and res.series["t"] == []


def test_infer_start_only_failures() -> None:
    df = frame([(0, None, "failed", 0, T0 + 5), (0, None, "skipped", 0, T0 + 3)])
    assert infer_start_us(df) == T0 + 3


# --- live tail -------------------------------------------------------------------------------


def test_live_tail_reads_only_new_complete_lines(tmp_path: Path) -> None:
    prefix = tmp_path / "txlog"
    tail = LiveTail(prefix)
    assert tail.poll() == (None, None)  # nothing yet
    f0 = tmp_path / "txlog.123"
    lines = [f"0 {i} {1000 + i} 0 1700000000 {i * 1000}\n" for i in range(100)]
    f0.write_text("".join(lines[:50]) + lines[50][:7])  # a torn line at the end
    tps, p95 = tail.poll()
    assert tps == 50 and p95 == pytest.approx(
        np.percentile([1000 + i for i in range(50)], 95) / 1000
    )
    with open(f0, "a") as f:
        f.write(lines[50][7:] + "".join(lines[51:]))
    # a second thread's file appears, with a failed line and later times
    (tmp_path / "txlog.123.1").write_text(
        "1 1 failed 0 1700000001 50000\n1 2 5000 0 1700000001 60000\n"
    )
    tps, p95 = tail.poll()
    # last second of log time: (1700000000.06, 1700000001.06] -> lines 61..99 and the new one
    assert tps == 40
    assert p95 == pytest.approx(
        np.percentile([1000 + i for i in range(61, 100)] + [5000], 95) / 1000
    )
    assert tail.poll() == (tps, p95)  # no new bytes: same figures, nothing re-read


def test_live_tail_ignores_lag_and_retries_columns(tmp_path: Path) -> None:
    (tmp_path / "p.9").write_text("0 1 100 0 1700000000 1 5 0\n0 2 skipped 0 1700000000 2 0 0\n")
    assert LiveTail(tmp_path / "p").poll() == (1.0, 0.1)
