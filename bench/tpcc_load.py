"""TPC-C load speed (warehouses per minute) and, optionally, NOPM/TPM of a short run.

Starts a throwaway PostgreSQL (PostgreSQL defaults, as the `default` profile; fsync on) as OS
user postgres under /tmp on a port in 56590-56599, loads W warehouses with N jobs, prints the
figures and removes the server. Target: W=10 with 2 jobs at >= 10 warehouses per minute.

    python bench/tpcc_load.py                          # W=10, --jobs 2, PostgreSQL 15
    python bench/tpcc_load.py --warehouses 4 --partition --bindir /path/to/pg18/bin
    python bench/tpcc_load.py --run-seconds 30 --clients 8   # + a short run: NOPM, TPM
    python bench/tpcc_load.py --conninfo "host=... dbname=..."   # an existing empty database
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from pgrig.archive.records import ScriptResult
from pgrig.workloads import tpcc

PG15 = Path("/usr/lib/postgresql/15/bin")
PORTS = range(56590, 56600)


def _as_postgres(*cmd: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, capture_output=True)


@contextmanager
def temp_server(bindir: Path, settings: list[str]) -> Iterator[tuple[str, int]]:
    port = next(p for p in PORTS if _port_free(p))
    root = Path(tempfile.mkdtemp(prefix="pgrig-tpcc-bench-", dir="/tmp"))
    root.chmod(0o755)
    shutil.chown(root, "postgres")
    data = root / "data"
    try:
        _as_postgres(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust")
        with open(data / "postgresql.conf", "a") as f:
            f.write(f"listen_addresses = '127.0.0.1'\nport = {port}\n")
            f.write(f"unix_socket_directories = '{root}'\n")
            for s in settings:
                f.write(s + "\n")
        _as_postgres(
            str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "start"
        )
        with psycopg.connect(f"host=127.0.0.1 port={port} user=postgres", autocommit=True) as c:
            c.execute("CREATE DATABASE tpcc")
        yield f"host=127.0.0.1 port={port} user=postgres dbname=tpcc", port
    finally:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bindir / "pg_ctl"), "-D", str(data),
             "-m", "immediate", "stop"],
            capture_output=True,
        )  # fmt: skip
        shutil.rmtree(root, ignore_errors=True)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def short_run(conninfo: str, bindir: Path, clients: int, seconds: int) -> dict:
    """pgbench with the TPC-C scripts; per-script counts from pgbench's summary."""
    work = Path(tempfile.mkdtemp(prefix="pgrig-tpcc-run-"))
    try:
        specs, defines, max_tries = tpcc.pgbench_scripts(work, conninfo=conninfo, protocol="simple")
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
        cmd = [
            str(bindir / "pgbench"), "-h", str(params["host"]), "-p", str(params["port"]),
            "-U", str(params["user"]), "-n", "-c", str(clients), "-j", "2", "-T", str(seconds),
            f"--max-tries={max_tries}", *(f"-D{k}={v}" for k, v in defines.items()),
            *(f"-f{s.path}@{s.weight}" for s in specs), str(params["dbname"]),
        ]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results = []
    blocks = out.split("SQL script ")[1:]
    for i, (spec, block) in enumerate(zip(specs, blocks, strict=True)):
        n = int(block.split(" transactions (")[0].rsplit("- ", 1)[1])
        failed = int(block.split("number of failed transactions: ")[1].split()[0])
        results.append(ScriptResult(i, spec.name, spec.weight, transactions=n, failed=failed))
    return tpcc.summarize(results, float(seconds))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouses", "-W", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--partition", action="store_true")
    ap.add_argument("--bindir", type=Path, default=PG15)
    ap.add_argument("--set", action="append", default=[], help="extra postgresql.conf line")
    ap.add_argument("--conninfo", help="use this (empty) database instead of a temp server")
    ap.add_argument("--run-seconds", type=int, default=0)
    ap.add_argument("--clients", type=int, default=8)
    args = ap.parse_args()

    def progress(done: int, total: int, label: str) -> None:
        print(f"\r  {done:>4}/{total} {label:<40}", end="", flush=True)

    def bench(conninfo: str) -> None:
        t0 = time.monotonic()
        info = tpcc.generate(conninfo, args.warehouses, args.jobs, args.partition, progress)
        wall = time.monotonic() - t0
        print()
        print(
            f"TPC-C load: W={args.warehouses} jobs={args.jobs} partition={args.partition}: "
            f"{wall:.1f} s, {args.warehouses * 60 / wall:.1f} warehouses/min, "
            f"{info['size_bytes'] / 2**20:.0f} MiB (phases {info['phases']})"
        )
        results = tpcc.check(conninfo)
        print("consistency after load:", "pass" if tpcc.all_passed(results) else "FAIL")
        if args.run_seconds:
            s = short_run(conninfo, args.bindir, args.clients, args.run_seconds)
            print(
                f"TPC-C run: {args.clients} clients, {args.run_seconds} s: NOPM {s['nopm']:.0f}, "
                f"TPM {s['tpm']:.0f}, rollbacks {s['rollbacks']}, failures {s['failures']}"
            )
            print(json.dumps(s["mix_pct"]))
            results = tpcc.check(conninfo)
            print("consistency after run:", "pass" if tpcc.all_passed(results) else "FAIL")

    if args.conninfo:
        bench(args.conninfo)
    else:
        with temp_server(args.bindir, args.set) as (conninfo, _port):
            bench(conninfo)


if __name__ == "__main__":
    main()
