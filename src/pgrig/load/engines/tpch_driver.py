"""TPC-H behind the driver seam (load/engines/driver.py): the power test (tpch:power), the
throughput test (tpch:throughput) and the performance test (tpch: the power test, then the
throughput test, in one run: QphH@Size).

The engine is pgrig's own query-stream process (workloads/tpch/stream.py), started, followed,
stopped and archived as pgbench and sysbench are (samplers, insights' plans, the lease, the
status). It prints one JSON line per refresh function and query as each ends; the record gets:

- extra["tpch"]: every query's and refresh function's time, status (ok, timeout, error),
  rows, parameters and (power) temp bytes; Power@Size, Throughput@Size, QphH@Size where the
  run gives them (workloads/tpch/metrics.py), the geometric mean of the query times, the seed;
- the run's window: the whole run, from RF1's start to RF2's end (nothing is a warm-up: the
  spec's power test is what a cold start costs); measured_s is its length;
- scripts: one per query (Q1..Q22; over a throughput run's streams, the mean; a performance
  test's power test's), so `runs show` lists the 22 times; transactions: the queries that
  completed.

A query that exceeds --query-timeout is cancelled by the server (statement_timeout), recorded
as timed out and named in a warning; Power@Size is then not computed (its time is unknown).
"""

from __future__ import annotations

import secrets
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from pgrig.archive.records import LatencyStats, ScriptResult
from pgrig.load.engines import results
from pgrig.load.engines.driver import Stream
from pgrig.record.documents import StreamEvent, TpchDoc
from pgrig.record.run import SeriesColumns
from pgrig.record.stream_docs import stream_event
from pgrig.request.values import number_text

if TYPE_CHECKING:
    from rich.console import Console

    from pgrig.archive.records import RunRecord
    from pgrig.record.documents import DatasetDoc
    from pgrig.request import RunRequest


class TpchDriver:
    engine = "tpch"
    progress_on: Stream = "stdout"
    lead_in_s = 0
    total_s: int | None = None  # as long as the queries take
    txlog_mode: str | None = None

    def __init__(self, spec: RunRequest, client_env: dict[str, str], dataset: DatasetDoc) -> None:
        self.spec = spec
        self.client_env = client_env
        workload = spec.workload.strip()
        self.mode = "performance" if workload == "tpch" else workload.removeprefix("tpch:")
        self.scale_factor = float(dataset.get("scale_factor") or 1.0)
        self.streams = spec.streams or _minimum_streams(self.scale_factor)
        self.seed = spec.tpch_seed if spec.tpch_seed is not None else secrets.randbelow(2**31)
        # what the stream process printed, read once as each line arrives (on_line): its
        # events, each with the second of the run it ended at, and its other lines (a
        # traceback) for a failure's reason
        self.events: list[StreamEvent] = []
        self.other: list[str] = []
        self.origin_s: float | None = None

    def version(self) -> str:
        from pgrig import __version__

        return f"pgrig {__version__} (TPC-H streams)"

    def before_launch(self, console: Console) -> None:
        return None

    def command(self) -> list[str]:
        argv = [
            sys.executable, "-m", "pgrig.workloads.tpch.stream", "--mode", self.mode,
            "--scale-factor", f"{self.scale_factor:g}", "--seed", str(self.seed),
        ]  # fmt: skip
        if self.mode != "power":
            argv += ["--streams", str(self.streams)]
        if self.spec.query_timeout_s is not None:
            argv += ["--query-timeout", number_text(self.spec.query_timeout_s)]  # not %g: 6 digits
        return argv

    def start(self, origin_us: int, art_dir: Path) -> None:
        self.origin_s = origin_us / 1e6

    def on_line(self, line: str) -> None:
        event = stream_event(line)
        if event is not None:
            event["at_s"] = round(time.time() - (self.origin_s or time.time()), 3)
            self.events.append(event)
        elif line.strip():
            self.other = [*self.other[-2:], line]

    def other_pids(self) -> list[int]:
        return []

    def live(self) -> tuple[float | None, float | None]:
        """(queries completed per second so far, None): what the live view can show."""
        done = [e for e in self.events if e.get("event") == "query"]
        if not done or self.origin_s is None:
            return None, None
        return len(done) / max(time.time() - self.origin_s, 1e-3), None

    def stop(self) -> None:
        return None

    def partial_series(self, warmup_s: float) -> SeriesColumns:
        return _series(self.events)

    def fill(
        self,
        rec: RunRecord,
        completed: bool,
        stdout: str,
        stderr: str,
        series_raw: dict[str, dict[str, list]],
    ) -> None:
        from pgrig.workloads.tpch import metrics

        events = self.events
        doc = metrics.summarize(events)
        doc["query_timeout_s"] = self.spec.query_timeout_s
        if self.mode != "power":
            doc["order_note"] = (
                "streams 1..S take a query order drawn from the seed, not the spec's "
                "Appendix A table"
            )
        doc["refresh_note"] = (
            "RF1 copies existing orders under keys dbgen never uses; RF2 deletes them again "
            "(the data stays as generated: workloads/tpch/refresh.py)"
        )
        rec.extra["tpch"] = doc
        queries = doc["queries"]
        ok = [e for e in queries if e.get("status") == "ok"]
        rec.transactions = len(ok)
        rec.failed = len(queries) - len(ok)
        rec.retried = rec.skipped = 0
        rec.measured_s = doc.get("interval_s")
        rec.tps = None  # queries are not transactions: the TPC-H figures are in extra["tpch"]
        rec.scripts = _per_query(
            [q for q in queries if q.get("test") == "power"] if self.mode == "performance"
            else queries
        )  # fmt: skip
        if doc["timed_out"]:
            limit = self.spec.query_timeout_s  # None: the server's own statement_timeout
            rec.add_warning(
                "tpch_timeout",
                f"{', '.join(doc['timed_out'])} "
                + (
                    f"exceeded --query-timeout {limit:g} s"
                    if limit is not None
                    else "exceeded the server's statement_timeout"
                )
                + " and were cancelled: "
                + {"power": "no Power@Size", "throughput": "no Throughput@Size"}.get(
                    self.mode, "no QphH@Size"
                )
                + " for this run",
            )
        if any(int(e.get("leftovers") or 0) for e in events if e.get("event") == "start"):
            rec.add_warning(
                "tpch_leftovers",
                "orders left by an earlier run stopped between RF1 and RF2 were deleted first",
            )
        series = _series(events)
        if series["t"]:
            rec.series["pgbench"] = series  # the load's series: one kind whatever the engine
        results.attach_samples(rec, series_raw, self.origin_s)

    def cross_check(self, rec: RunRecord, stdout: str, stderr: str) -> str | None:
        """Every planned query must be reported (never one silently dropped)."""
        doc = rec.extra.get("tpch") or TpchDoc()
        expected = 22 * {"power": 1, "throughput": self.streams}.get(self.mode, 1 + self.streams)
        found = len(doc.get("queries") or [])
        if found != expected:
            return f"the TPC-H streams reported {found} of {expected} queries"
        return None

    def output_error(self) -> tuple[str, str] | None:
        return None

    def failure(self, stdout: str, stderr: str, rc: int) -> str:
        from pgrig.load.engines.process import failure_reason

        errs = [f"{_step(e)}: {e.get('error')}" for e in self.events if e.get("status") == "error"]
        return failure_reason(rc, errs or self.other, "", "TPC-H stream")


def _minimum_streams(sf: float) -> int:
    """Clause 5.3.4's minimum number of query streams for a scale factor."""
    for bound, streams in ((1, 2), (10, 3), (30, 4), (100, 5), (300, 6), (1000, 7)):
        if sf <= bound:
            return streams
    return 8


def _step(event: StreamEvent) -> str:
    """What an event is about: Q7, RF1, or a session ("stream 2": it could not connect)."""
    if event.get("event") == "query":
        return f"Q{event.get('query')}"
    if event.get("event") == "refresh":
        return str(event.get("function"))
    return str(event.get("stream"))


def _per_query(queries: list[StreamEvent]) -> list[ScriptResult]:
    """One script per query: its mean time over the streams that completed it."""
    times: dict[int, list[float]] = defaultdict(list)
    failed: dict[int, int] = defaultdict(int)
    for e in queries:
        q = int(e["query"])
        if e.get("status") == "ok":
            times[q].append(float(e["seconds"]) * 1000)
        else:
            failed[q] += 1
    out = []
    for q in sorted(set(times) | set(failed)):
        ms = times.get(q, [])
        mean = sum(ms) / len(ms) if ms else None
        out.append(
            ScriptResult(
                script_no=q - 1,
                name=f"Q{q}",
                transactions=len(ms),
                failed=failed.get(q, 0),
                latency=LatencyStats(avg=mean, max=max(ms) if ms else None),
            )
        )
    return out


def _series(events: list[StreamEvent]) -> SeriesColumns:
    """Queries completed per whole second of the run (t from the run's start)."""
    ends = [int(e["at_s"]) for e in events if e.get("event") == "query" and "at_s" in e]
    if not ends:
        return {"t": [], "tps": []}
    counts = [0] * (max(ends) + 1)
    for t in ends:
        counts[t] += 1
    return {"t": [*range(len(counts))], "tps": [float(c) for c in counts]}
