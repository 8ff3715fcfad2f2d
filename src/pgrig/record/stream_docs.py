"""The query streams' documents: the events TPC-H's and CH-benCHmark's stream processes print
(one JSON object a line: workloads/tpch/stream.py, workloads/chbench/stream.py), and the run's
TPC-H document summarised from them (RunExtra.tpch: workloads/tpch/metrics.summarize)."""

from __future__ import annotations

from typing_extensions import TypedDict

__all__ = ["StreamEvent", "TpchDoc", "TpchTestDoc"]


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
