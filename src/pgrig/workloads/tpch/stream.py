"""The TPC-H load process: `python -m pgrig.workloads.tpch.stream --mode MODE ...`.

The run's load engine (load/engines/tpch_driver.py) starts it as it starts pgbench or
sysbench; it connects through the libpq variables it is given and prints one JSON object per
line on stdout as each step ends: {"event": "start" | "refresh" | "query" | "end", ...}.
Every query is reported, whatever its outcome: "ok", "timeout" (it exceeded --query-timeout:
statement_timeout cancelled it) or "error" (with the server's message); the process exits 1
when a query or refresh function failed with an error, 0 otherwise (timeouts included: the
run says which queries timed out).

Power (clause 5.3.3): RF1, stream 0's 22 queries in the spec's order, RF2, one session.
Throughput (clause 5.3.4): S query streams (1..S, each its own order and parameters), each
on its own session, and one refresh stream running S pairs RF1/RF2, all started together
once every session is connected (a barrier: the interval Ts holds no connection time).
Performance (clause 5.3.2): the power test, then the throughput test on the same data, every
event tagged with its test ("test": "power" | "throughput"); the throughput test's refresh
stream takes the refresh sets after the power test's (pairs 1..S).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator

import psycopg
from psycopg import errors

from pgrig.record.documents import StreamEvent
from pgrig.workloads.tpch import queries, refresh

Emit = Callable[[StreamEvent], None]


def stdout_lines() -> Emit:
    """One JSON object a line on stdout, whole whichever thread writes it (the engine reads
    each line as it comes)."""
    lock = threading.Lock()

    def emit(event: StreamEvent) -> None:
        with lock:
            sys.stdout.write(json.dumps(event) + "\n")
            sys.stdout.flush()

    return emit


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    emit = stdout_lines()
    seed = None if args.qualification else args.seed
    if args.mode == "power":
        return power(args.scale_factor, seed, args.seed, args.query_timeout, emit)
    if args.mode == "performance":
        return performance(
            args.scale_factor, seed, args.seed, args.streams, args.query_timeout, emit
        )
    return throughput(args.scale_factor, seed, args.seed, args.streams, args.query_timeout, emit)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pgrig-tpch-stream")
    p.add_argument("--mode", choices=("power", "throughput", "performance"), required=True)
    p.add_argument("--scale-factor", type=float, required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--streams", type=int, default=1)
    p.add_argument("--query-timeout", type=float, default=0.0)  # seconds; 0: none
    p.add_argument("--qualification", action="store_true")  # clause 2.4's validation values
    return p


def power(sf: float, params_seed: int | None, seed: int, timeout_s: float, emit: Emit) -> int:
    plan = queries.plan_stream(sf, params_seed, 0)
    rs = refresh.refresh_set(sf, seed, 0)
    with _session() as conn:
        emit({
            "event": "start", "mode": "power", "scale_factor": sf, "seed": seed,
            "qualification": params_seed is None, "streams": 0,
            "order": [p.query for p in plan], "leftovers": refresh.leftovers(conn),
        })  # fmt: skip
        started = time.monotonic()
        ok = _refresh(conn, "RF1", 0, rs, emit)
        for planned in plan:
            ok &= _query(conn, 0, planned, emit, timeout_s, temp=True)
        ok &= _refresh(conn, "RF2", 0, rs, emit)
        emit({"event": "end", "seconds": round(time.monotonic() - started, 6)})
    return 0 if ok else 1


def performance(
    sf: float, params_seed: int | None, seed: int, streams: int, timeout_s: float, emit: Emit
) -> int:
    """The power test, then (unless it failed) the throughput test: QphH@Size's two parts."""

    def tagged(test: str) -> Emit:
        return lambda event: emit({**event, "test": test})

    rc = power(sf, params_seed, seed, timeout_s, tagged("power"))
    if rc != 0:  # a query or refresh function failed: its error fails the run
        return rc
    return throughput(sf, params_seed, seed, streams, timeout_s, tagged("throughput"), first_pair=1)


def throughput(
    sf: float,
    params_seed: int | None,
    seed: int,
    streams: int,
    timeout_s: float,
    emit: Emit,
    first_pair: int = 0,
) -> int:
    """`first_pair`: the first refresh set (after a power test's own, pair 0); the refresh
    events are numbered 1..S whatever it is."""
    sets = [refresh.refresh_set(sf, seed, p) for p in range(first_pair, first_pair + streams)]
    with _session() as conn:
        left = refresh.leftovers(conn)
    plans = {s: queries.plan_stream(sf, params_seed, s) for s in range(1, streams + 1)}
    emit({
        "event": "start", "mode": "throughput", "scale_factor": sf, "seed": seed,
        "qualification": params_seed is None, "streams": streams, "leftovers": left,
        "order": {str(s): [p.query for p in plan] for s, plan in plans.items()},
    })  # fmt: skip
    results: dict[str, bool] = {}
    # every session connected before the clock starts: Ts (clause 5.3.4) is the queries' and
    # refresh functions' time, never a connection's. A session that cannot connect breaks the
    # barrier, so nobody waits for it and the run fails naming it.
    started: list[float] = []  # the clock starts as the last session arrives
    ready = threading.Barrier(streams + 1, action=lambda: started.append(time.monotonic()))

    def connected(name: str, body: Callable[[psycopg.Connection], bool]) -> None:
        try:
            with _session() as conn:
                ready.wait()
                results[name] = body(conn)
        except threading.BrokenBarrierError:
            return  # another session failed to connect: it says why
        except psycopg.Error as e:
            ready.abort()
            emit({"event": "session", "stream": name, "status": "error",
                  "error": str(e).strip().splitlines()[0][:500]})  # fmt: skip

    def query_stream(s: int, conn: psycopg.Connection) -> bool:
        ok = True
        for planned in plans[s]:
            ok &= _query(conn, s, planned, emit, timeout_s, temp=False)
        return ok

    def refresh_stream(conn: psycopg.Connection) -> bool:
        ok = True
        for n, rs in enumerate(sets, 1):
            ok &= _refresh(conn, "RF1", n, rs, emit)
            ok &= _refresh(conn, "RF2", n, rs, emit)
        return ok

    bodies: dict[str, Callable[[psycopg.Connection], bool]] = {
        f"stream {s}": functools.partial(query_stream, s) for s in plans
    }
    bodies["refresh"] = refresh_stream
    threads = [threading.Thread(target=connected, args=item) for item in bodies.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not started:  # a session never connected: no interval was measured
        return 1
    emit({"event": "end", "seconds": round(time.monotonic() - started[0], 6)})
    return 0 if len(results) == len(threads) and all(results.values()) else 1


@contextlib.contextmanager
def _session() -> Iterator[psycopg.Connection]:
    with psycopg.connect("", autocommit=True) as conn:
        yield conn


def _query(
    conn: psycopg.Connection,
    stream: int,
    planned: queries.Planned,
    emit: Emit,
    timeout_s: float,
    temp: bool,
) -> bool:
    """One query, timed from its text sent to its last row fetched; reported whatever ends it.
    The timeout is the query's alone (statement_timeout around it): refresh functions and
    pgrig's own statements are never cancelled."""
    before = _temp_bytes(conn) if temp else None
    if timeout_s > 0:
        conn.execute(f"SET statement_timeout = {max(1, round(timeout_s * 1000))}")
    event: StreamEvent = {"event": "query", "stream": stream, "query": planned.query}
    t0 = time.monotonic()
    try:
        rows = conn.execute(planned.sql).fetchall()
    except errors.QueryCanceled:
        event |= {"status": "timeout", "seconds": round(time.monotonic() - t0, 6)}
    except psycopg.Error as e:
        event |= {"status": "error", "seconds": round(time.monotonic() - t0, 6),
                  "error": str(e).strip().splitlines()[0][:500]}  # fmt: skip
    else:
        event |= {"status": "ok", "seconds": round(time.monotonic() - t0, 6), "rows": len(rows)}
    if timeout_s > 0:
        conn.execute("SET statement_timeout = 0")
    if before is not None:
        after = _temp_bytes(conn)
        event["temp_bytes"] = after - before if after is not None else None
    event["params"] = planned.params
    emit(event)
    return event.get("status") != "error"


# The one query step, also CH-benCHmark's analytic streams' (workloads/chbench/stream.py)
run_query = _query


def _refresh(
    conn: psycopg.Connection, name: str, stream: int, rs: refresh.RefreshSet, emit: Emit
) -> bool:
    fn = refresh.rf1 if name == "RF1" else refresh.rf2
    event: StreamEvent = {"event": "refresh", "function": name, "stream": stream,
                             "orders": len(rs.new_keys)}  # fmt: skip
    t0 = time.monotonic()
    try:
        fn(conn, rs)
    except psycopg.Error as e:
        event |= {"status": "error", "seconds": round(time.monotonic() - t0, 6),
                  "error": str(e).strip().splitlines()[0][:500]}  # fmt: skip
    else:
        event |= {"status": "ok", "seconds": round(time.monotonic() - t0, 6)}
    emit(event)
    return event.get("status") == "ok"


def _temp_bytes(conn: psycopg.Connection) -> int | None:
    """The database's temp file bytes so far, this session's own included: its pending
    statistics are flushed first (PostgreSQL 15+ flushes them at most once a second
    otherwise). None where the server cannot tell."""
    try:
        conn.execute("SELECT pg_stat_force_next_flush()")  # flushed as this session idles
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()"
        ).fetchone()
    except psycopg.Error:
        return None
    return int(row[0]) if row and row[0] is not None else None


if __name__ == "__main__":
    raise SystemExit(main())
