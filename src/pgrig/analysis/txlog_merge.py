"""Several pgbench generators (one per load host) merged exactly into one run's figures.

Every generator's per-transaction log lines go into ONE TxlogStream (analysis/txlog.py), their
end times moved onto the control machine's clock first. The stream then sums the per-second
counts on that one clock and adds the HDR histograms bucket by bucket (analysis/hdr.py), so the
run's percentiles, overall, per script and per second, are those of every transaction of every
generator, exactly as if one pgbench had written all the lines (never an average of each
generator's percentiles, which is no percentile of anything). Per-type counts and failures add.

Clocks: pgbench stamps each line with its host's wall clock (epoch seconds and microseconds).
A host's offset from the control clock is measured from round trips over the SSH session
(`clock_offset`): the remote reads its clock somewhere between our send and our receive, so
offset = t_remote - (t_sent + t_received) / 2 with an error of at most half the round trip;
the sample with the shortest round trip gives the tightest bound. A line's end on the control
clock is its end minus its host's offset.

Beside the merged figures, each generator's own counts (lines, transactions, failures, its first
transaction's start and its last end, on the control clock) are kept: they show the split of the
load and how far apart the generators really started (`first_tx_skew_us`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pgrig.analysis.txlog import TxlogStream
from pgrig.analysis.txlog_parse import FAILED_CODES, OK, SKIPPED, UNKNOWN
from pgrig.record.documents import ClockDoc, GeneratorDoc


@dataclass(frozen=True)
class ClockOffset:
    """A host's clock minus the control machine's clock, in microseconds."""

    offset_us: int
    error_us: int  # |true offset - offset_us| <= error_us (half the best round trip)
    rtt_us: int  # the best round trip
    samples: int

    def to_control(self, remote_us: int) -> int:
        return remote_us - self.offset_us

    def as_dict(self) -> ClockDoc:
        return {
            "offset_ms": self.offset_us / 1000.0,
            "error_ms": self.error_us / 1000.0,
            "rtt_ms": self.rtt_us / 1000.0,
            "samples": self.samples,
        }


LOCAL_CLOCK = ClockOffset(offset_us=0, error_us=0, rtt_us=0, samples=0)


def clock_offset(samples: Sequence[tuple[int, int, int]]) -> ClockOffset:
    """The offset from round trips (t_sent, t_remote, t_received), microseconds: the sample
    with the shortest round trip, offset = t_remote - (t_sent + t_received) / 2."""
    valid = [s for s in samples if s[2] >= s[0]]
    if not valid:
        raise ValueError("no round trip to measure a clock offset from")
    sent, remote, received = min(valid, key=lambda s: s[2] - s[0])
    rtt = received - sent
    return ClockOffset(
        offset_us=round(remote - (sent + received) / 2),
        error_us=(rtt + 1) // 2,
        rtt_us=rtt,
        samples=len(valid),
    )


@dataclass
class GeneratorCounts:
    """One generator's own lines over the whole run (lead-in and drain included)."""

    lines: int = 0
    transactions: int = 0  # ok
    failed: int = 0
    skipped: int = 0
    first_start_us: int | None = None  # control clock: the first ok transaction's start
    first_end_us: int | None = None
    last_end_us: int | None = None

    def as_dict(self) -> GeneratorDoc:
        return {
            "lines": self.lines,
            "transactions": self.transactions,
            "failed": self.failed,
            "skipped": self.skipped,
            "first_start_us": self.first_start_us,
            "first_end_us": self.first_end_us,
            "last_end_us": self.last_end_us,
        }


class TxlogMerge:
    """Feeds each generator's log lines, on the control clock, into one TxlogStream.

    feed() may be called from several reader threads (one per host); the stream has its own
    lock. A source name must be unique over the run: it is prefixed with the generator's name.
    """

    def __init__(self, stream: TxlogStream, offsets: dict[str, ClockOffset]) -> None:
        self.stream = stream
        self.offsets = dict(offsets)
        self.counts = {name: GeneratorCounts() for name in offsets}
        self._lock = threading.Lock()

    def feed(self, generator: str, chunks: Sequence[tuple[str, bytes]]) -> None:
        """Fold complete lines of one generator's files (file name, lines)."""
        offset = self.offsets[generator]
        named = [(f"{generator}:{source}", data) for source, data in chunks]
        lines = self.stream.feed_many(named, shift_us=-offset.offset_us)
        if lines is None:
            return
        by_status = np.bincount(lines.code, minlength=UNKNOWN + 1)
        ok = lines.code == OK
        first_start = int((lines.end_us[ok] - lines.latency[ok]).min()) if ok.any() else None
        with self._lock:
            c = self.counts[generator]
            c.lines += int(lines.code.size)
            c.transactions += int(by_status[OK])
            c.failed += int(sum(by_status[k] for k in FAILED_CODES))
            c.skipped += int(by_status[SKIPPED])
            c.first_start_us = _min(c.first_start_us, first_start)
            c.first_end_us = _min(c.first_end_us, int(lines.end_us.min()))
            c.last_end_us = _max(c.last_end_us, int(lines.end_us.max()))

    def first_tx_skew_us(self) -> int | None:
        """How far apart the generators' first transactions started (control clock); None
        unless at least two generators ran one."""
        starts = [c.first_start_us for c in self.counts.values() if c.first_start_us is not None]
        return max(starts) - min(starts) if len(starts) >= 2 else None


def launch_origin_us(launches_us: dict[str, int], offsets: dict[str, ClockOffset]) -> int:
    """The grid origin of a merged run: the earliest launch on the control clock, less its
    clock error. pgbench's -T deadline comes after its own launch, so no generator's deadline
    falls before origin + T and the window's last second stays whole for every one of them
    (analysis/window.py)."""
    return min(offsets[g].to_control(t) - offsets[g].error_us for g, t in launches_us.items())


def launch_skew_us(launches_us: dict[str, int], offsets: dict[str, ClockOffset]) -> int:
    """Spread of the generators' launches on the control clock (0 for one generator)."""
    on_control = [offsets[g].to_control(t) for g, t in launches_us.items()]
    return max(on_control) - min(on_control) if on_control else 0


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _max(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
