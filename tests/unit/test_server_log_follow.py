"""A run's part of the server log file: read whole, kept bounded, cut from the file once read.

The file here is written the way the postmaster writes it (a descriptor opened O_APPEND, one
write per record) with real records (tests/fixtures/insights/). Cutting the head needs a file
system with FALLOC_FL_COLLAPSE_RANGE (ext4, XFS); elsewhere the tests check that nothing is cut
and the reason is recorded.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pgrig.archive.records import RunRecord
from pgrig.insights.log_feed import LogFeed
from pgrig.load.core import run_files, server_log_follow
from pgrig.load.core.server_log_follow import RunServerLog
from pgrig.provision.server import log_file
from pgrig.provision.state.environment import Environment

ROUNDS = 100
FOLLOW_BYTES = 256 * 1024  # the follower reads (and cuts) once this much waits
LOGS = Path(__file__).parents[1] / "fixtures" / "insights"
RECORDS = (LOGS / "pg15_tpcc_hammerdb.log").read_bytes() + (
    LOGS / "pg15_locks_temp_errors.log"
).read_bytes()


def _collapses(directory: Path) -> bool:
    probe = directory / "probe"
    probe.write_bytes(b"x" * (3 * 65536))
    cut = log_file.cut_head(probe, 2 * 65536, keep=0, min_cut=1)
    probe.unlink()
    return cut.removed > 0


def _env(tmp_path: Path) -> Environment:
    return Environment(name="e", member_dir=str(tmp_path))


def _append(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _finish(log: RunServerLog, tmp_path: Path) -> tuple[RunRecord, str]:
    rec = RunRecord(env_name="e", workload="x", clients=1, threads=1)
    files = run_files.RunFiles(rec, tmp_path / "art")
    log.finish(files, rec)
    assert files.problems == []
    return rec, (tmp_path / "art" / "server.log").read_text()


def test_the_run_reads_its_part_and_no_more(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "art").mkdir()
    env.logfile.write_bytes(b"2026-11-23 04:00:00.000 UTC [1] LOG:  before the run\n")
    feed = LogFeed(lambda: 0.0, "UTC", plans=True)
    log = RunServerLog.open(env, tmp_path / "art", feed)
    assert log is not None
    _append(env.logfile, RECORDS + b"2026-11-23 04:09:00.000 UTC [2] LOG:  still bein")
    rec, kept = _finish(log, tmp_path)
    assert kept == RECORDS.decode()  # the line still being written waits for the next reader
    doc = rec.extra["server_log"]
    assert doc["written_bytes"] == doc["kept_bytes"] == len(RECORDS)
    assert doc["server_file_cut_bytes"] == 0  # a small file is left as it is
    assert rec.artifacts == {"server.log": "server.log"}
    got = feed.results()
    assert got["plans"]["samples"] == 7 and got["log_digest"]["errors"]["count"] == 2


def test_no_log_file_no_part(tmp_path: Path) -> None:
    assert RunServerLog.open(_env(tmp_path), tmp_path, None) is None
    external = Environment(name="x", kind="external", dsn="host=h")
    assert RunServerLog.open(external, tmp_path, None) is None


def test_what_earlier_runs_read_is_cut_before_the_run(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "art").mkdir()
    old = b"2026-11-23 03:00:00.000 UTC [1] LOG:  old\n" * 200_000  # 8.4 MB
    env.logfile.write_bytes(old)
    log = RunServerLog.open(env, tmp_path / "art", None)
    assert log is not None
    _append(env.logfile, RECORDS)
    rec, kept = _finish(log, tmp_path)
    assert kept == RECORDS.decode()
    cut = rec.extra["server_log"]["server_file_cut_bytes"]
    if not _collapses(tmp_path):
        assert cut == 0 and "cannot cut" in rec.extra["server_log"]["problems"][0]
        return
    # the server's file keeps the last KEEP_BYTES of what was read, and everything after
    size = env.logfile.stat().st_size
    assert cut == len(old) + len(RECORDS) - size
    assert size - len(RECORDS) <= log_file.KEEP_BYTES + os.stat(env.logfile).st_blksize
    assert env.logfile.read_bytes().endswith(old[-1000:] + RECORDS)


def _wait_for(done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "the follower did not read during the load"
        time.sleep(0.005)


def test_a_fast_growing_log_is_read_and_cut_during_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer appends ~3 MB while the run follows with small thresholds: the file stays
    bounded, every record reaches the insights in order, the kept file is bounded."""
    if not _collapses(tmp_path):
        pytest.skip("this file system cannot cut the head of a file")
    monkeypatch.setattr(server_log_follow, "FOLLOW_BYTES", FOLLOW_BYTES)
    monkeypatch.setattr(server_log_follow, "POLL_S", 0.01)
    monkeypatch.setattr(log_file, "KEEP_BYTES", 64 * 1024)
    monkeypatch.setattr(log_file, "MIN_CUT_BYTES", 64 * 1024)
    env = _env(tmp_path)
    (tmp_path / "art").mkdir()
    env.logfile.write_bytes(b"")
    feed = LogFeed(lambda: 0.0, "UTC", plans=True)
    log = RunServerLog.open(env, tmp_path / "art", feed)
    assert log is not None
    log.follow()
    largest = 0
    fd = os.open(env.logfile, os.O_WRONLY | os.O_APPEND)
    try:
        for _ in range(ROUNDS):  # one write per record, as the server does
            for record in RECORDS.split(b"\n20"):
                chunk = record if record.startswith(b"20") else b"20" + record
                os.write(fd, chunk if chunk.endswith(b"\n") else chunk + b"\n")
            largest = max(largest, env.logfile.stat().st_size)
            # a server busy with much else: the reader keeps up. Waited for, not slept: on a
            # loaded machine (CI) a fixed 10 ms let the reader fall behind a whole half
            _wait_for(lambda: env.logfile.stat().st_size - log.pos <= FOLLOW_BYTES)
    finally:
        os.close(fd)
    rec, kept = _finish(log, tmp_path)
    doc = rec.extra["server_log"]
    assert doc["written_bytes"] == ROUNDS * len(RECORDS)
    assert doc["server_file_cut_bytes"] > 0 and "problems" not in doc
    assert largest < ROUNDS * len(RECORDS) / 2
    got = feed.results()
    assert got["plans"]["samples"] == ROUNDS * 7
    assert got["log_digest"]["errors"]["count"] == ROUNDS * 2
    assert doc["records"]["plan"] == ROUNDS * 7 and doc["kept_bytes"] < 4 * 2**20
    assert kept.startswith(RECORDS.decode()[:20000])


def test_cutting_loses_nothing_an_appending_writer_writes(tmp_path: Path) -> None:
    """The collapse and a writer's O_APPEND writes at once: every line is in the file, once."""
    if not _collapses(tmp_path):
        pytest.skip("this file system cannot cut the head of a file")
    path = tmp_path / "server.log"
    path.write_bytes(b"")
    done = threading.Event()

    def write() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        for i in range(200_000):
            os.write(fd, b"line %07d\n" % i)
        os.close(fd)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    pos, removed, seen = 0, 0, bytearray()
    while not done.is_set() or path.stat().st_size > pos:
        with open(path, "rb") as f:
            f.seek(pos)
            data = f.read()
        data = data[: data.rfind(b"\n") + 1]
        seen += data
        pos += len(data)
        cut = log_file.cut_head(path, pos, keep=0, min_cut=4096)
        removed += cut.removed
        pos -= cut.removed
    writer.join()
    assert seen == b"".join(b"line %07d\n" % i for i in range(200_000))
    assert removed > 0


def test_a_cut_never_reaches_the_end_and_unsupported_says_why(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert log_file.cut_head(path, 100, keep=0, min_cut=1) == log_file.Cut(0)
    assert log_file.cut_head(tmp_path / "none", 100).problem is not None
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        shm = Path("/dev/shm") / f"pgrig-test-{os.getpid()}"
        shm.write_bytes(b"x" * 3 * 65536)
        try:
            cut = log_file.cut_head(shm, 2 * 65536, keep=0, min_cut=1)
        finally:
            shm.unlink()
        assert cut.removed == 0 and "cannot cut the head" in (cut.problem or "")
