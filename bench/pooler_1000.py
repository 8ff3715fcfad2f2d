"""1,000 clients on seed 003's tickets:read, direct and through pgbouncer: TPS and errors.

    python bench/pooler_1000.py [--clients 1000] [--rows 5000000] [--duration 10] [--warmup 15]
                                [--pool-size 100] [--threads 4] [--nofile 1024] [--keep]

Creates its own pgrig home (under /tmp) and environment: PostgreSQL 15 with
max_connections = clients + 100, a pgbouncer in front (transaction mode, scram-sha-256), and
`--rows` synthetic tickets. Every pgrig command starts with the open-files limit lowered to
--nofile (1,024 is the usual default, at which seed 003's pgbouncer failed above 900 clients),
so the figures show that pgrig raises the limit for pgbouncer and pgbench itself. Then one
`pgrig run` per path and a table: TPS over the measured window, transactions, failed
transactions, connection errors (pgbench's and pgbouncer's log), login time, peaks of waiting
clients, pgbouncer's and the server's CPU.

The warm-up counts from pgbench's start and absorbs the logins (1,000 backends to fork on the
direct path); the measured window is what remains of --duration after it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CONN_ERRORS = re.compile(
    r"connection to server|could not connect|too many clients|Too many open files|"
    r"accept\(\) failed|client \d+ aborted|password authentication failed",
    re.I,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--duration", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=15)
    ap.add_argument("--pool-size", type=int, default=100)
    ap.add_argument("--nofile", type=int, default=1024, help="Soft open-files limit to start at.")
    ap.add_argument("--pg", default="15")
    ap.add_argument("--keep", action="store_true", help="Keep the home and the environment.")
    args = ap.parse_args()

    home = Path(tempfile.mkdtemp(prefix="pgrig-bench-pooler-", dir="/tmp"))
    home.chmod(0o755)
    env = {**os.environ, "PGRIG_HOME": str(home)}
    env.pop("PGRIG_ARCHIVE", None)

    def low_nofile() -> None:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(args.nofile, hard), hard))

    def pgrig(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            ["pgrig", *argv],
            capture_output=True,
            text=True,
            env=env,
            preexec_fn=low_nofile,
            check=False,
        )
        if check and proc.returncode != 0:
            sys.exit(f"failed: pgrig {' '.join(argv)}\n{proc.stderr}")
        return proc

    name = "p1000"
    try:
        print(f"home {home}; soft open-files limit for every pgrig command: {args.nofile}")
        pgrig(
            "env",
            "create",
            name,
            "--pg",
            args.pg,
            "--set",
            f"max_connections={args.clients + 100}",
            "--set",
            "shared_buffers=1GB",
        )
        pgrig(
            "env",
            "pooler",
            name,
            "add",
            "pgbouncer",
            "--pool-size",
            str(args.pool_size),
            "--max-client-conn",
            str(max(2000, args.clients + 100)),
        )
        gen = json.loads(
            pgrig(
                "db", "generate", name, "--scenario", "tickets", "--rows", str(args.rows), "--json"
            ).stdout
        )
        print(f"tickets: {args.rows:,} rows generated in {gen['seconds']:.1f} s")
        pooler = json.loads(pgrig("env", "pooler", name, "show", "--json").stdout)
        print(
            f"pgbouncer {pooler['version']}: {pooler['config']['mode']} mode, pool "
            f"{pooler['config']['pool_size']}, max_client_conn "
            f"{pooler['config']['max_client_conn']}, nofile {pooler['config']['nofile']}"
        )

        rows = []
        for via in ("direct", "pooler"):
            offsets = {p: Path(p).stat().st_size for p in pooler["paths"]["log"]}
            proc = pgrig(
                "run",
                name,
                "-w",
                "tickets:read",
                "-c",
                str(args.clients),
                "-j",
                str(args.threads),
                "--duration",
                f"{args.duration:g}",
                "--warmup",
                f"{args.warmup:g}",
                "--via",
                via,
                "--json",
                check=False,
            )
            run = json.loads(proc.stdout) if proc.stdout.strip() else {}
            if not run:
                print(f"{via}: pgrig run failed: {proc.stderr.strip()}")
                continue
            rows.append(summarize(run, via, home, offsets))
        print()
        print_table(rows)
    finally:
        if not args.keep:
            pgrig("env", "destroy", name, "--yes", check=False)
            shutil.rmtree(home, ignore_errors=True)


def summarize(run: dict, via: str, home: Path, log_offsets: dict[str, int]) -> dict:
    """The figures of one run, read back from the archive (series, extra, artifacts)."""
    os.environ["PGRIG_HOME"] = str(home)
    from pgrig.archive.artifacts import artifact_path
    from pgrig.archive.store import Archive

    rec = Archive(None).get_run(run["id"])
    stderr = read(rec.artifacts.get("pgbench.stderr"), artifact_path)
    stdout = read(rec.artifacts.get("pgbench.stdout"), artifact_path)
    pooler_log = ""
    for path, offset in log_offsets.items():
        with open(path, "rb") as f:
            f.seek(offset)
            pooler_log += f.read().decode(errors="replace")
    errors = [ln for ln in (stderr + "\n" + pooler_log).splitlines() if CONN_ERRORS.search(ln)]
    login = re.search(r"initial connection time = ([\d.]+) ms", stdout)
    os_s = rec.series.get("os", {})
    pool = rec.series.get("pooler", {})
    in_window = [i for i, t in enumerate(os_s.get("t", [])) if 0 < t <= (rec.measured_s or 0)]

    def mean(col: list) -> float | None:
        vals = [col[i] for i in in_window if i < len(col) and col[i] is not None]
        return sum(vals) / len(vals) if vals else None

    return {
        "path": "pgbouncer" if via != "direct" else "direct",
        "status": rec.status,
        "tps": rec.tps,
        "measured_s": rec.measured_s,
        "transactions": rec.transactions,
        "failed": rec.failed,
        "conn_errors": len(errors),
        "first_error": errors[0][:160] if errors else "",
        "login_s": float(login.group(1)) / 1000 if login else None,
        "p95_ms": rec.latency.p95,
        "cl_waiting_max": max((v or 0 for v in pool.get("cl_waiting", [])), default=None),
        "pooler_cpu": mean(os_s.get("proc_pooler_cpu", [])),
        "server_cpu": mean(os_s.get("proc_server_cpu", [])),
        "pgbench_cpu": mean(os_s.get("proc_pgbench_cpu", [])),
    }


def read(rel: str | None, resolve) -> str:
    try:
        return resolve(rel).read_text(errors="replace") if rel else ""
    except OSError:
        return ""


def fmt(v: object, spec: str = "") -> str:
    if v is None:
        return "-"
    return format(v, spec) if spec else str(v)


def print_table(rows: list[dict]) -> None:
    head = (
        "path",
        "status",
        "TPS",
        "window s",
        "transactions",
        "failed",
        "conn errors",
        "login s",
        "p95 ms",
        "max waiting",
        "pgbouncer %CPU",
        "server %CPU",
        "pgbench %CPU",
    )
    print(" | ".join(head))
    for r in rows:
        print(
            " | ".join(
                [
                    r["path"],
                    r["status"],
                    fmt(r["tps"], ",.0f"),
                    fmt(r["measured_s"], ".1f"),
                    fmt(r["transactions"], ","),
                    fmt(r["failed"]),
                    fmt(r["conn_errors"]),
                    fmt(r["login_s"], ".1f"),
                    fmt(r["p95_ms"], ".1f"),
                    fmt(r["cl_waiting_max"]),
                    fmt(r["pooler_cpu"], ".0f"),
                    fmt(r["server_cpu"], ".0f"),
                    fmt(r["pgbench_cpu"], ".0f"),
                ]
            )
        )
    for r in rows:
        if r["first_error"]:
            print(f"{r['path']}: first connection error: {r['first_error']}")
    print("(%CPU: share of one core, mean over the measured window; TPS over the window)")


if __name__ == "__main__":
    main()
