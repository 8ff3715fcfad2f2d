"""The log reader thread: files growing in torn writes, two threads' files, freed pages, the
gzip artifact, a broken log. The writer here is a thread writing like pgbench (buffered,
cutting lines anywhere); the integration tests run the real pgbench."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.window import WindowPlan
from pgrig.load.engines.txlog_follower import PUNCH_STEP, TxlogFollower, punch_hole

T0 = 1_700_000_000_000_000


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one (where pgrig puts the logs)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="pgrig-follow-test-", dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def log_text(thread: int, n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    lat = rng.integers(50, 5000, n)
    rows = []
    for i in range(n):
        end = T0 + 1_000_000 + i * 300 + thread
        word = "failed" if i % 997 == 0 else str(lat[i])
        rows.append(f"{thread} {i} {word} {i % 2} {end // 1_000_000} {end % 1_000_000}\n")
    return "".join(rows).encode()


def write_like_pgbench(path: Path, data: bytes, seed: int, torn_tail: bytes = b"") -> None:
    """Buffered writes of random sizes (lines cut anywhere), a little time between them."""
    rng = np.random.default_rng(seed)
    with open(path, "wb", buffering=0) as f:
        pos = 0
        while pos < len(data):
            step = int(rng.integers(1, 64 << 10))
            f.write(data[pos : pos + step])
            pos += step
            if rng.random() < 0.05:
                time.sleep(0.001)
        f.write(torn_tail)


def new_stream(threads: int = 2) -> TxlogStream:
    return TxlogStream(
        origin_us=T0,
        plan=WindowPlan(lead_in_s=1, measured_s=100),
        has_lag=False,
        has_retries=False,
        script_names=["a", "b"],
        expected_sources=threads,
    )


def test_follows_growing_files_like_a_whole_read(workdir: Path) -> None:
    prefix = workdir / "txlog"
    texts = [log_text(0, 150_000, 1), log_text(1, 150_000, 2)]  # ~5 MiB each
    keep = workdir / "keep"
    keep.mkdir()
    stream = new_stream()
    follower = TxlogFollower(prefix, stream, keep_dir=keep, poll_s=0.005).start()
    writers = [
        threading.Thread(
            target=write_like_pgbench, args=(workdir / "txlog.4242", texts[0], 3, b"0 9 12")
        ),
        threading.Thread(target=write_like_pgbench, args=(workdir / "txlog.4242.1", texts[1], 4)),
    ]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stats = follower.stop()
    assert stats.error is None and stats.files == 2
    assert stats.bytes_read == sum(len(t) for t in texts) + len(b"0 9 12")
    got = stream.finish(True)

    direct = new_stream()
    direct.feed(texts[0], "a")
    direct.feed(texts[1], "b")
    want = direct.finish(True)
    assert got is not None and want is not None
    assert got.lines == want.lines == 300_000  # the torn tail is not a line
    assert got.transactions == want.transactions and got.failed == want.failed
    assert got.latency.as_dict() == pytest.approx(want.latency.as_dict(), rel=1e-12)
    assert got.series == want.series
    # pages behind the reader were freed; the size pgbench sees is unchanged
    if stats.hole_punching:
        for p in (workdir / "txlog.4242", workdir / "txlog.4242.1"):
            st = p.stat()
            assert st.st_size > 4 * PUNCH_STEP
            assert st.st_blocks * 512 < PUNCH_STEP + (64 << 10)
    # the artifact: every complete line, compressed, named after pgbench's thread number
    assert stats.kept == {"txlog.0": "txlog.0.gz", "txlog.1": "txlog.1.gz"}
    assert gzip.decompress((keep / "txlog.0.gz").read_bytes()) == texts[0]
    assert gzip.decompress((keep / "txlog.1.gz").read_bytes()) == texts[1]


def test_a_broken_log_stops_the_figures_not_the_draining(workdir: Path) -> None:
    prefix = workdir / "txlog"
    stream = new_stream(threads=1)
    follower = TxlogFollower(prefix, stream, poll_s=0.005).start()
    bad = b"0 1 100 0 1700000001 5 77\n" * 200_000  # 7 fields: not this run's log format
    write_like_pgbench(workdir / "txlog.7", bad, 5)
    stats = follower.stop()
    assert stats.error and "expected 6" in stats.error
    assert stats.bytes_read == len(bad)
    assert stream.finish(True) is None
    if stats.hole_punching:
        assert (workdir / "txlog.7").stat().st_blocks * 512 < PUNCH_STEP + (64 << 10)


def test_stop_without_any_file_and_twice(workdir: Path) -> None:
    follower = TxlogFollower(workdir / "txlog", new_stream(), poll_s=0.005).start()
    stats = follower.stop()
    assert stats.files == 0 and stats.bytes_read == 0
    assert follower.stop() is stats


def test_punch_hole_frees_pages(workdir: Path) -> None:
    p = workdir / "f"
    p.write_bytes(b"x" * (4 << 20))
    fd = os.open(p, os.O_RDWR)
    try:
        if not punch_hole(fd, 0, 3 << 20):
            pytest.skip("this file system cannot punch holes")
        assert p.stat().st_size == 4 << 20
        assert p.stat().st_blocks * 512 <= (1 << 20) + 4096
        with open(p, "rb") as f:
            assert f.read(4) == b"\0\0\0\0"
            f.seek(3 << 20)
            assert f.read(4) == b"xxxx"
    finally:
        os.close(fd)
