"""The query streams' documents: the events TPC-H's and CH-benCHmark's stream processes print
(one JSON object a line: workloads/tpch/stream.py, workloads/chbench/stream.py), and the run's
documents summarised from them: TPC-H's (RunExtra.tpch: workloads/tpch/metrics.summarize) and
CH-benCHmark's analytic side (RunExtra.chbench: workloads/chbench/metrics.summarize)."""

from __future__ import annotations

import json

from typing_extensions import TypedDict

from pgrig.record.doc_read import read_document

__all__ = [
    "ChbenchDoc",
    "ChbenchQuery",
    "ChbenchQueryRow",
    "ChbenchStreamError",
    "StreamEvent",
    "TpchDoc",
    "TpchTestDoc",
    "stream_event",
]


class StreamEvent(TypedDict, total=False):
    """One event of a stream process: "start", "query", "refresh", "session" (a TPC-H session
    that could not connect), "end"; CH-benCHmark's "ready" and "error" too. The engine reads
    each line as it comes (load/engines/tpch_driver.py, chbench_driver.py)."""

    event: str
    test: str  # a TPC-H performance test's part: "power" | "throughput"
    # start
    mode: str  # TPC-H: "power" | "throughput"
    scale_factor: float
    seed: int
    qualification: bool  # clause 2.4's validation values, no random parameters
    streams: int
    order: list[int] | dict[str, list[int]]  # query numbers, per stream ("1", "2"...)
    leftovers: int  # orders of an earlier run stopped between RF1 and RF2, deleted first
    until: float  # CH-benCHmark: the streams stop at this epoch second
    query_timeout_s: float | None
    at: float  # CH-benCHmark: epoch seconds (ready, start, end)
    # query, refresh, session, error
    stream: int | str  # its stream's number; a session: "stream 2", "refresh"
    query: int
    function: str  # RF1 | RF2
    orders: int  # the refresh set's orders
    status: str  # ok | timeout | error (CH-benCHmark: cut, at the window's end)
    seconds: float  # the query's or refresh function's time; end: the test's interval
    rows: int
    error: str
    temp_bytes: int | None  # a power test's query: temp file bytes it wrote
    params: dict[str, str]  # the substitution parameters
    started_at: float  # CH-benCHmark: epoch seconds
    ended_at: float
    at_s: float  # the engine's: seconds into the run the line arrived


class TpchTestDoc(TypedDict, total=False):
    """A performance test's part (its power or throughput test)."""

    interval_s: float | None
    complete: bool
    streams: int
    geomean_s: float | None


class TpchDoc(TypedDict, total=False):
    """RunExtra.tpch: every query and refresh function's time and status, Power@Size,
    Throughput@Size, QphH@Size (a performance test), the seed."""

    mode: str  # power | throughput | performance
    scale_factor: float
    seed: int | None
    qualification: bool | None
    streams: int
    order: list[int] | dict[str, list[int]] | None
    queries: list[StreamEvent]
    refresh: list[StreamEvent]
    timed_out: list[str]  # Q7...
    failed: list[str]
    interval_s: float | None
    geomean_s: float | None
    power_at_size: float | None
    throughput_at_size: float | None
    qphh_at_size: float | None
    complete: bool  # every query and refresh function ran to its end
    temp_bytes: int | None
    power: TpchTestDoc
    throughput: TpchTestDoc
    # the run's (load/engines/tpch_driver.py)
    query_timeout_s: float | None  # --query-timeout (None: the server's statement_timeout)
    order_note: str  # how the streams' query order was drawn
    refresh_note: str  # what the refresh functions do to the data


class ChbenchQueryRow(StreamEvent, total=False):
    """One analytic query of a CH-benCHmark run: its stream event (without "event"), whether
    it ended inside the measured window, and when (seconds from the window's start)."""

    in_window: bool
    ended_s: float


class ChbenchQuery(TypedDict, total=False):
    """One CH query (Q1..Q22) over the measured window."""

    completed: int
    median_s: float | None
    max_s: float | None
    timed_out: int
    errors: int
    cut: int


class ChbenchStreamError(TypedDict, total=False):
    stream: int | str | None
    error: str | None


class ChbenchDoc(TypedDict, total=False):
    """RunExtra.chbench: the analytic streams' queries, counted over the TPC-C transactions'
    measured window (workloads/chbench/metrics.py says how), queries per hour and per query."""

    analytic_clients: int
    query_timeout_s: float | None
    order: list[int] | dict[str, list[int]] | None
    ready_at: float | None  # the sessions connected (epoch seconds)
    started_at: float | None  # the streams' start
    started_s: float | None  # that start from the window's (negative: in the lead-in)
    counting: str
    window_s: float | None
    completed: int | None  # None: no analytic stream
    qph: float | None
    cut: int
    timed_out: int
    errors: int
    before_window: int
    per_query: dict[str, ChbenchQuery]
    queries: list[ChbenchQueryRow]
    stream_errors: list[ChbenchStreamError]
    streams_exit: int | None  # the stream process's exit code (load/engines/chbench_driver.py)


def stream_event(line: str) -> StreamEvent | None:
    """A stream process's line as its event, checked once as it is read (record/doc_read.py);
    None for a line that is no event (a torn last line, a message of another kind)."""
    if not line.startswith("{"):
        return None
    try:
        found = json.loads(line)
    except ValueError:
        return None
    if not isinstance(found, dict) or "event" not in found:
        return None
    return read_document(StreamEvent, found)
