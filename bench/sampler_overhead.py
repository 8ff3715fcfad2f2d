"""What watching a benchmark costs: CPU per sample of the OS and PostgreSQL samplers.

Prints, for each part, milliseconds of CPU per sample and the share of one core at 1 Hz
(target: under 0.5% of one core in total, client side plus the server's sampling backend).

    python bench/sampler_overhead.py                 # OS sampler only (and a psutil baseline)
    python bench/sampler_overhead.py --temp-server   # + a throwaway PostgreSQL 15 on 56390
    python bench/sampler_overhead.py --conninfo "host=127.0.0.1 port=5432 user=postgres" \\
        --dbname pgrig --postmaster-pid-file /path/to/data/postmaster.pid

--backends N opens N idle extra connections so the per-process tracking of the postmaster's
children is measured with N backends alive.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import psycopg

from pgrig.metrics.os_metrics import OsSampler, pids_from_file
from pgrig.metrics.pg_metrics import PgSampler
from pgrig.metrics.sampler import Sampler

PG15 = Path("/usr/lib/postgresql/15/bin")


def cpu_ms(fn: Callable[[], object], n: int) -> float:
    """Thread CPU milliseconds per call, over n calls."""
    fn()
    c0 = time.thread_time()
    for _ in range(n):
        fn()
    return (time.thread_time() - c0) * 1000.0 / n


def line(what: str, ms: float) -> None:
    # at 1 Hz, x ms of CPU per sample is x/1000 of a core: x/10 percent
    print(f"{what:<52} {ms:8.3f} ms CPU/sample  {ms / 10:7.3f} % of one core at 1 Hz")


def backend_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


@contextmanager
def temp_server(port: int) -> Iterator[tuple[str, Path]]:
    """A throwaway PostgreSQL 15 owned by OS user postgres, removed afterwards."""
    if os.geteuid() != 0 or not (PG15 / "postgres").exists():
        raise SystemExit("--temp-server needs root and PostgreSQL 15 in " + str(PG15))
    base = Path(tempfile.mkdtemp(prefix="pgrig-bench-", dir="/tmp"))
    base.chmod(0o755)
    shutil.chown(base, "postgres")
    data = base / "data"

    def su(cmd: str) -> None:
        subprocess.run(["su", "postgres", "-c", cmd], check=True, capture_output=True)

    try:
        su(f"{PG15}/initdb -D {data} -A trust -U postgres --no-sync")
        opts = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={base}"
        su(f"{PG15}/pg_ctl -D {data} -l {base}/log -w -o '{opts}' start")
        yield f"host=127.0.0.1 port={port} user=postgres", data
    finally:
        subprocess.run(
            ["su", "postgres", "-c", f"{PG15}/pg_ctl -D {data} -m immediate -w stop"],
            capture_output=True,
        )
        shutil.rmtree(base, ignore_errors=True)


def bench_os(n: int, pid_file: Path | None) -> None:
    print("# OS sampler (/proc read directly, descriptors kept open)")
    s = OsSampler()
    line("OsSampler.sample() host rows only", cpu_ms(s.sample, n))
    if pid_file is not None:
        s.track_processes("server", pids_from_file(pid_file))
        kids = len(psutil.Process(pids_from_file(pid_file)()[0]).children())
        line(f"  + tracking postmaster and its {kids} children", cpu_ms(s.sample, n))
    s.close()

    def psutil_row() -> None:  # the same figures through psutil, for comparison
        psutil.cpu_times()
        psutil.virtual_memory()
        psutil.swap_memory()
        psutil.disk_io_counters(perdisk=True)
        psutil.cpu_stats()

    line("psutil equivalent (cpu_times, memory, disks, stats)", cpu_ms(psutil_row, n))


def bench_pg(conninfo: str, dbname: str, n: int) -> float:
    print("# PostgreSQL sampler (one prepared query per sample)")
    pg = PgSampler(conninfo, dbname)
    assert pg._conn is not None
    pid = pg._conn.info.backend_pid
    pg.sample()
    ns0 = backend_ns(pid)
    client = cpu_ms(pg.sample, n)
    server = (backend_ns(pid) - ns0) / 1e6 / (n + 1)
    pg.close()
    line("PgSampler.sample() client side (psycopg)", client)
    line("PgSampler.sample() server side (its backend)", server)
    return server


def bench_sampler(os_s: OsSampler, pg: PgSampler | None, seconds: float) -> Sampler:
    s = Sampler(os_s, pg, interval=1.0)
    s.start()
    time.sleep(seconds)
    s.stop()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--conninfo")
    ap.add_argument("--dbname", default="postgres")
    ap.add_argument("--postmaster-pid-file", type=Path)
    ap.add_argument("--temp-server", action="store_true")
    ap.add_argument("--port", type=int, default=56390)
    ap.add_argument("--samples", type=int, default=2000, help="calls per micro-benchmark")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of the 1 Hz run")
    ap.add_argument("--backends", type=int, default=20, help="idle extra connections")
    args = ap.parse_args()

    with temp_server(args.port) if args.temp_server else _nothing() as server:
        conninfo, pid_file = args.conninfo, args.postmaster_pid_file
        if server is not None:
            conninfo, datadir = server
            pid_file = datadir / "postmaster.pid"
        idle = (
            [psycopg.connect(conninfo, dbname=args.dbname) for _ in range(args.backends)]
            if (conninfo)
            else []
        )
        try:
            bench_os(args.samples, pid_file)
            server_ms = bench_pg(conninfo, args.dbname, args.samples) if conninfo else 0.0
            print(f"# Sampler thread at 1 Hz for {args.seconds:.0f} s (OS + PostgreSQL)")
            os_s = OsSampler()
            if pid_file is not None:
                os_s.track_processes("server", pids_from_file(pid_file))
            pg = PgSampler(conninfo, args.dbname) if conninfo else None
            s = bench_sampler(os_s, pg, args.seconds)
            ms = s.cpu_ms_per_sample() or 0.0
            line(f"Sampler thread, {s.samples} samples", ms)
            line("total incl. server-side query cost", ms + server_ms)
        finally:
            for c in idle:
                c.close()


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


if __name__ == "__main__":
    main()
