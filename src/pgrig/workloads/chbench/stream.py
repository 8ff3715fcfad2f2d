"""CH-benCHmark's analytic streams: `python -m pgrig.workloads.chbench.stream --streams M
--until EPOCH [--query-timeout S]`.

The chbench load engine (load/engines/chbench_driver.py) starts this process before the
run's launch: it connects every session, says "ready", and waits for the deadline on stdin,
which the engine writes at the launch, beside pgbench's TPC-C clients, so the queries share
the transactions' lead-in and measured window (Python's start-up and the connections are
never inside it). Each stream is one session cycling through the 22 CH queries (stream s starts
at query 1 + (s - 1) x 22 / M, so streams do not run the same query in step) until `--until`,
the measured window's planned end: a query still running then is cancelled and reported as
"cut" (it did not complete inside the window). SIGTERM (the run stopped early) ends the
streams the same way.

Each query runs through TPC-H's stream machinery (workloads/tpch/stream.run_query: timed from
its text sent to its last row fetched, QueryCanceled under statement_timeout is a timeout, any
other error recorded with the server's message) and is printed as one JSON line whatever its
outcome: {"event": "query", "stream", "query", "status": ok | timeout | error | cut,
"seconds", "rows", "started_at", "ended_at"} (epoch seconds: the run places each query in its
window). Each session samples every plan auto_explain logs (its own sample rate, 1: see
_cycle). A stream stops at its first error (the same error every cycle would only repeat it);
the process exits 1 when a query failed with an error, 0 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import time

import psycopg

from pgrig.record.documents import StreamEvent
from pgrig.workloads.chbench.queries import QUERIES
from pgrig.workloads.tpch import stream as tpch_stream
from pgrig.workloads.tpch.queries import Planned

NUMBERS = tuple(sorted(QUERIES))


def order(stream: int, streams: int) -> list[int]:
    """Stream s's cycle (s = 1..streams): the 22 queries, rotated so that streams start apart."""
    shift = (stream - 1) * len(NUMBERS) // max(1, streams)
    return [*NUMBERS[shift:], *NUMBERS[:shift]]


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run(args.streams, args.until, args.query_timeout, tpch_stream.stdout_lines())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pgrig-chbench-stream")
    p.add_argument("--streams", type=int, required=True)
    # epoch seconds: the window's end; without it, read from stdin once every session is
    # connected ("ready"): the run's launch is then the streams' start
    p.add_argument("--until", type=float, default=None)
    p.add_argument("--query-timeout", type=float, default=0.0)  # seconds; 0: none
    return p


class _Stream:
    """One analytic stream: its session, the query in flight, whether it failed."""

    def __init__(self, number: int, streams: int) -> None:
        self.number = number
        self.order = order(number, streams)
        self.conn: psycopg.Connection | None = None
        self.current: tuple[int, float] | None = None  # (query, started_at) in flight
        self.failed = False


def run(streams: int, until: float | None, timeout_s: float, emit: tpch_stream.Emit) -> int:
    """The streams until `until` (or SIGTERM); every query started is reported."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    each = [_Stream(s, streams) for s in range(1, streams + 1)]
    try:
        for st in each:  # connected before the clock starts: never inside the window
            _connect(st, timeout_s, emit)
        emit({"event": "ready", "at": round(time.time(), 6)})
        if until is None:
            line = sys.stdin.readline().strip()  # the run's launch; nothing: it was called off
            until = float(line) if line else None
        if until is None or stop.is_set():
            return 0
        return _run_until(each, until, timeout_s, stop, emit)
    finally:
        for st in each:
            if st.conn is not None:
                with contextlib.suppress(psycopg.Error, OSError):
                    st.conn.close()


def _run_until(
    each: list[_Stream],
    until: float,
    timeout_s: float,
    stop: threading.Event,
    emit: tpch_stream.Emit,
) -> int:
    emit({"event": "start", "streams": len(each), "until": until,
          "query_timeout_s": timeout_s or None, "at": round(time.time(), 6),
          "order": {str(st.number): st.order for st in each}})  # fmt: skip
    threads = [threading.Thread(target=_cycle, args=(st, stop, emit)) for st in each]
    for t in threads:
        t.start()
    stop.wait(max(0.0, until - time.time()))
    stop.set()
    for st in each:  # the queries in flight at the window's end are cut, not left running
        conn = st.conn
        if st.current is not None and conn is not None:
            with contextlib.suppress(psycopg.Error, OSError):  # its session is gone already
                conn.cancel_safe(timeout=5)
    for t in threads:
        t.join(timeout=30)
    for st in each:  # cancelled between statements, or still running: reported all the same
        if st.current is not None:
            query, started = st.current
            ended = time.time()
            emit({"event": "query", "stream": st.number, "query": query, "status": "cut",
                  "seconds": round(ended - started, 6), "started_at": round(started, 6),
                  "ended_at": round(ended, 6)})  # fmt: skip
    emit({"event": "end", "at": round(time.time(), 6)})
    return 1 if any(st.failed for st in each) else 0


def _connect(st: _Stream, timeout_s: float, emit: tpch_stream.Emit) -> None:
    """The stream's session (TPC-H's: the libpq variables the run gives), or its error."""
    try:
        conn = psycopg.connect("", autocommit=True)
        if timeout_s > 0:  # the session runs CH queries only: one statement_timeout for all
            conn.execute(f"SET statement_timeout = {max(1, round(timeout_s * 1000))}")
        # every analytic query's plan in the server log (insights/plans.py reads it): the rate
        # the insights collector keeps for the transactions' thousands of statements would
        # leave these few queries unexplained; this session's alone, where it may
        with contextlib.suppress(psycopg.Error):
            conn.execute("SET auto_explain.sample_rate = 1")
        st.conn = conn
    except psycopg.Error as e:
        st.failed = True
        emit({"event": "error", "stream": st.number, "error": str(e).strip()[:500]})


def _cycle(st: _Stream, stop: threading.Event, emit: tpch_stream.Emit) -> None:
    def reported(event: StreamEvent) -> None:
        ended = time.time()
        started = st.current[1] if st.current is not None else ended
        st.current = None  # reported: no longer in flight
        if event.get("status") == "timeout" and stop.is_set():
            event["status"] = "cut"  # cancelled at the window's end, not by statement_timeout
        event.pop("params", None)  # the CH queries take none
        event |= {"started_at": round(started, 6), "ended_at": round(ended, 6)}
        if event.get("status") == "error":
            st.failed = True
        emit(event)

    conn = st.conn
    if conn is None:  # it never connected: said by _connect
        return
    try:
        while not stop.is_set():
            for number in st.order:
                if stop.is_set():
                    break
                st.current = (number, time.time())
                planned = Planned(query=number, params={}, sql=QUERIES[number])
                if not tpch_stream.run_query(conn, st.number, planned, reported, 0, False):
                    return  # the same error every cycle would only repeat it
    except psycopg.Error as e:  # a cancel that landed between statements, a lost session
        if st.current is not None and stop.is_set():
            return  # reported as cut by run()
        st.current, st.failed = None, True
        emit({"event": "error", "stream": st.number, "error": str(e).strip()[:500]})


if __name__ == "__main__":
    raise SystemExit(main())
