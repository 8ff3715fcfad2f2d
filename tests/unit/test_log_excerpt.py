"""The server log a run keeps is bounded; the insights still see every record.

Built from real server logs (tests/fixtures/insights/: auto_explain plans, checkpoints, a
deadlock, lock waits, temp files, errors of PostgreSQL 15 and 18): a long log is those records
repeated, each repetition with its own process id so that order can be checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pgrig.insights import log_excerpt, server_log
from pgrig.insights.log_digest import LogDigest
from pgrig.insights.log_excerpt import LogExcerpt, describe, kind_of
from pgrig.insights.log_feed import LogFeed
from pgrig.insights.plans import PlanBook

LOGS = Path(__file__).parents[1] / "fixtures" / "insights"
PID = re.compile(r"\[\d+\]")
MAIN = re.compile(r"^\S+ \S+ \S+ \[(\d+)\] (LOG|WARNING|ERROR|FATAL|PANIC):  ")


def _lines(name: str) -> list[str]:
    return (LOGS / name).read_text().splitlines()


def _long_log(repeats: int) -> list[str]:
    """Plans (TPC-C, pgbench), checkpoints, errors and lock waits, `repeats` times over; the
    process id of repetition i is 100000 + i."""
    block = (
        _lines("pg15_tpcc_hammerdb.log")
        + _lines("pg18_tpcb_max_wal_size_32mb.log")
        + _lines("pg15_locks_temp_errors.log")
    )
    out = []
    for i in range(repeats):
        out += [PID.sub(f"[{100000 + i}]", line, count=1) for line in block]
    return out


def _excerpt(tmp_path: Path, lines: list[str], **caps: object) -> tuple[dict, str]:
    ex = LogExcerpt(tmp_path / "server.log", **caps)  # type: ignore[arg-type]
    for line in lines:
        ex.line(line)
    return ex.close(), (tmp_path / "server.log").read_text()


def _main_kinds(lines: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in lines:
        if MAIN.match(line):
            counts[kind_of(line)] = counts.get(kind_of(line), 0) + 1
    return counts


def test_kinds_of_real_records() -> None:
    lines = _lines("pg15_locks_temp_errors.log") + _lines("pg15_tpcc_hammerdb.log")
    kinds = {line.split("]", 1)[1][:40]: kind_of(line) for line in lines if MAIN.match(line)}
    assert kinds[" ERROR:  division by zero"] == "error"
    assert kinds[" ERROR:  deadlock detected"] == "error"
    assert kind_of(next(x for x in lines if "plan:" in x)) == "plan"
    assert kind_of(next(x for x in lines if "temporary file" in x)) == "log"
    assert kind_of("waiting for server to start.... done") == "other"


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_a_short_log_is_kept_whole(tmp_path: Path, name: str) -> None:
    doc, kept = _excerpt(tmp_path, _lines(name))
    assert kept == (LOGS / name).read_text()
    assert doc["written_bytes"] == doc["kept_bytes"] == len(kept.encode())
    assert doc["dropped"] == {} and doc["dropped_bytes"] == 0
    assert sum(doc["records"].values()) == sum(1 for x in _lines(name) if MAIN.match(x))


def test_a_long_log_keeps_head_stories_and_tail_and_counts_the_plans_left_out(
    tmp_path: Path,
) -> None:
    lines = _long_log(80)  # ~2.6 MB, 800 plans, 2,900 other records
    doc, kept = _excerpt(tmp_path, lines)
    written = sum(len(x.encode()) + 1 for x in lines)
    assert doc["written_bytes"] == written > 2 * 2**20
    bound = (
        log_excerpt.HEAD_BYTES
        + log_excerpt.TAIL_BYTES
        + sum(log_excerpt.MIDDLE_BYTES.values())
        + log_excerpt.RECORD_BYTES * 3  # the records that crossed a limit, the gap lines
    )
    assert doc["kept_bytes"] == len(kept.encode()) <= bound
    kept_lines = kept.splitlines()
    every, kept_kinds = _main_kinds(lines), _main_kinds(kept_lines)
    # every story is kept (they fit the middle's allowance), plans only at both ends
    for kind in ("error", "log"):
        assert kept_kinds[kind] == every[kind]
    assert 0 < kept_kinds["plan"] < every["plan"] / 2
    assert doc["dropped"] == {"plan": every["plan"] - kept_kinds["plan"]}
    assert doc["records"] == {k: every[k] for k in ("plan", "error", "log")}
    # in the server's order, whole records, the first and the last repetition whole
    pids = [int(m.group(1)) for x in kept_lines if (m := MAIN.match(x))]
    assert pids == sorted(pids) and pids[0] == 100000 and pids[-1] == 100079
    assert kept.startswith("\n".join(lines[:200]))
    assert kept.endswith("\n".join(lines[-200:]) + "\n")
    # each gap says what it left out; together they add up to the count
    gaps = [x for x in kept_lines if x.startswith("[pgrig] ")]
    assert gaps and all(re.fullmatch(r"\[pgrig\] \d+ records \(.+\) left out here: .*", g)
                        for g in gaps)  # fmt: skip
    left_out = sum(int(g.split()[1]) for g in gaps)
    assert left_out == doc["dropped"]["plan"]
    # the kept file reads back as records: the gap lines are no records
    back = list(server_log.records(tmp_path / "server.log", "UTC"))
    assert len(back) == sum(kept_kinds.values())


def test_what_is_kept_does_not_grow_with_the_log(tmp_path: Path) -> None:
    sizes = []
    for repeats in (200, 800):
        (tmp_path / str(repeats)).mkdir()
        lines = [x for x in _long_log(repeats) if "ERROR" not in x]  # plans and LOG stories
        doc, _ = _excerpt(tmp_path / str(repeats), lines, middle_bytes={"errors": 0, "other": 0})
        sizes.append(doc["kept_bytes"])
    assert abs(sizes[1] - sizes[0]) < 0.01 * sizes[0]


def test_errors_beyond_their_allowance_are_counted(tmp_path: Path) -> None:
    errors = [x for x in _lines("pg15_locks_temp_errors.log")[-2:]]  # division by zero
    lines = errors * 20000  # ~2.9 MB of ERROR + STATEMENT
    doc, kept = _excerpt(
        tmp_path, lines, head_bytes=4096, tail_bytes=4096, middle_bytes={"errors": 65536}
    )
    assert doc["records"] == {"error": 20000}
    kept_errors = kept.count("ERROR:  division by zero")
    assert doc["dropped"] == {"error": 20000 - kept_errors}
    assert kept_errors < 1000 and doc["kept_bytes"] < 4096 * 2 + 65536 + 1024
    assert "left out here: " in kept and " errors" in kept


def test_a_huge_record_is_cut(tmp_path: Path) -> None:
    first = "2026-11-23 04:02:23.509 UTC [15452] LOG:  duration: 0.993 ms  plan:"
    lines = [first] + ["\t" + "x" * 1000] * 200
    doc, kept = _excerpt(tmp_path, lines)
    assert len(kept.encode()) <= log_excerpt.RECORD_BYTES + 100
    assert "[pgrig] this record was cut: " in kept
    assert doc["records"] == {"plan": 1} and doc["dropped"] == {}


def test_a_full_disk_stops_the_file_not_the_counting(tmp_path: Path) -> None:
    ex = LogExcerpt(tmp_path / "missing-dir" / "server.log")
    for line in _lines("pg15_locks_temp_errors.log"):
        ex.line(line)
    with pytest.raises(OSError):
        ex.close()
    assert ex.summary()["records"]["error"] == 2


def test_describe() -> None:
    doc = {
        "written_bytes": 3 * 2**30,
        "kept_bytes": 3 * 2**20,
        "dropped": {"plan": 812004, "error": 1},
    }
    assert describe(doc) == "3.0 GiB written, 3.0 MiB kept, 812,004 plans, 1 error left out"
    assert describe({"written_bytes": 10, "kept_bytes": 10, "dropped": {}}) == (
        "10 B written, 10 B kept"
    )


@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")))
def test_the_feed_sees_what_reading_the_file_sees(name: str) -> None:
    """Line by line (as the runner reads during and after the load) = the file at once."""
    start = 1763870550.0
    book, digest = PlanBook(start), LogDigest(start)
    for rec in server_log.records(LOGS / name, "UTC"):
        if not book.add(rec):
            digest.add(rec)
    feed = LogFeed(lambda: start, "UTC", plans=True)
    for line in _lines(name):
        feed.line(line)
    got = feed.results()
    assert got == {"plans": book.result(), "log_digest": digest.result()}


def test_the_feed_without_plans_digests_them_and_a_failure_is_said() -> None:
    feed = LogFeed(lambda: None, "UTC", plans=False)
    for line in _lines("pg15_tpcc_standard_stock_level.log"):
        feed.line(line)
    got = feed.results()
    assert set(got) == {"log_digest"} and got["log_digest"]["records"] > 0

    class Broken(LogFeed):
        def _add(self, rec: object) -> None:
            raise RuntimeError("boom")

    broken = Broken(lambda: None, "UTC", plans=True)
    for line in _lines("pg15_locks_temp_errors.log"):
        broken.line(line)
    reason = "not collected: reading the server log: RuntimeError: boom"
    assert broken.results() == {
        "log_digest": {"collected": False, "reason": reason},
        "plans": {"collected": False, "reason": reason},
    }


def test_the_top_up_start_is_asked_for_when_it_is_known() -> None:
    lines = _lines("pg15_tpcc_hammerdb.log")
    plan_ts = [r.ts for r in server_log.records(LOGS / "pg15_tpcc_hammerdb.log", "UTC")
               if r.message.startswith("duration:")]  # fmt: skip
    known: list[float | None] = [None]
    feed = LogFeed(lambda: 0.0, "UTC", plans=True, top_up_from=lambda: known[0])
    half = len(lines) // 2
    for line in lines[:half]:  # read during the load: no top-up yet
        feed.line(line)
    known[0] = plan_ts[-1]  # the last plan is the top-up's
    for line in lines[half:]:
        feed.line(line)
    assert feed.results()["plans"]["top_up_samples"] == 1


def test_the_run_summary_says_it() -> None:
    from pgrig.archive.records import RunRecord
    from pgrig.views import run_summary

    rec = RunRecord(env_name="e", workload="x", clients=1, threads=1)
    assert not [k for k, _ in run_summary.build(rec).items if k == "server log"]
    rec.extra["server_log"] = {
        "written_bytes": 12 * 2**20,
        "kept_bytes": 600 * 1024,
        "dropped": {"plan": 4321},
    }
    items = dict(run_summary.build(rec).items)
    assert items["server log"] == "12.0 MiB written, 600.0 KiB kept, 4,321 plans left out"
