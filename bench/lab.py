"""What the benches share: raw pgbench aimed at an environment, a scratch pgrig home, the bench
environment, ABBA pairs of `pgrig run` (waits_overhead, insights_overhead) and one `pgrig run`
watched for its peak memory and scratch space (growth, txlog_memory)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abba import interleave

from pgrig.load.engines.pgbench_output import parse_summary
from pgrig.provision.state.environment import DEFAULT_DATABASE, Environment


def client_env(env_name: str) -> dict[str, str]:
    """The process environment for raw pgbench or psql aimed at a pgrig environment's data."""
    return Environment.load(env_name).client_process_env(DEFAULT_DATABASE)


def pgbench_tps(stdout: str) -> float:
    """The TPS pgbench printed (without initial connection time), by pgrig's own parser."""
    tps = parse_summary(stdout).tps
    if tps is None:
        raise SystemExit(f"pgbench printed no tps line:\n{stdout}")
    return tps


@contextmanager
def scratch_home(prefix: str, env_name: str, keep: bool = False) -> Iterator[Path]:
    """A throw-away pgrig home (its own SQLite archive) for this process and the pgrig commands
    it runs; on exit `env_name` is destroyed and, unless `keep`, the home removed."""
    from pgrig import paths

    # The scratch home shares the installed PostgreSQL builds (`pgrig pg install`) of the home
    # it replaces: without this only the system's PostgreSQL would be found.
    os.environ.setdefault("PGRIG_PG_DIR", str(paths.binaries_dir()))
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    home.chmod(0o755)  # the unprivileged server user reaches its data directory through it
    os.environ["PGRIG_HOME"] = str(home)
    os.environ.pop("PGRIG_ARCHIVE", None)
    try:
        yield home
    finally:
        subprocess.run(["pgrig", "env", "destroy", env_name, "--yes"], capture_output=True)
        if not keep:
            shutil.rmtree(home, ignore_errors=True)


def sh(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """What `argv` printed on stdout; the bench ends with its stderr when it fails."""
    out = subprocess.run(list(argv), capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(argv)}\n{out.stderr}")
    return out.stdout


def pgrig(*args: str) -> str:
    """What `pgrig ARGS` printed on stdout; the bench ends with its stderr when it fails."""
    return sh(["pgrig", *args])


def ensure_env(name: str, pg: str, scale: int) -> None:
    """The bench environment, created with pgbench data at `scale` if missing, running."""
    envs = json.loads(pgrig("env", "list", "--json"))
    if not any(e["name"] == name for e in envs):
        pgrig("env", "create", name, "--pg", pg)
        pgrig("db", "generate", name, "--scenario", "pgbench", "--scale", str(scale))
    pgrig("env", "start", name)


# --- ABBA pairs of `pgrig run` (bench/abba.py) on one environment --------------------------------


def load_options(
    ap: argparse.ArgumentParser, *, rounds: int, duration: int, warmup: int, clients: int
) -> None:
    """The options of a bench that pairs `pgrig run`s of one load (--pg, --scale: the
    environment's; --rounds: ABBA pairs; the rest: `pgrig run`'s)."""
    ap.add_argument("--pg", default="15")
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--duration", type=int, default=duration)
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--workload", default="pgbench:select-only")
    ap.add_argument("--clients", type=int, default=clients)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale", type=int, default=10)


@dataclass(frozen=True)
class Side:
    """One side of the pairs: its name, its own flags of `pgrig run`, and what puts the
    environment in its state before each of its runs."""

    name: str
    flags: Sequence[str] = ()
    before: Callable[[], object] | None = None


def pgrig_runs_abba(
    env: str, args: argparse.Namespace, tag: str, base: Side, candidate: Side
) -> dict[str, Any]:
    """`args.rounds` ABBA pairs of `pgrig run` (the load of load_options), each pair, the median
    ratio and the paired estimate printed (abba.interleave); the last candidate run's document
    (`run --json`) returned."""
    last: dict[str, Any] = {}

    def runs(side: Side, keep: bool) -> Callable[[], float]:
        def one() -> float:
            nonlocal last
            if side.before is not None:
                side.before()
            argv = ["pgrig", "run", env, "--workload", args.workload,
                    "--clients", str(args.clients), "--threads", str(args.threads),
                    "--duration", str(args.duration), "--warmup", str(args.warmup),
                    *side.flags, "--json", "--tag", f"bench={tag}"]  # fmt: skip
            doc = json.loads(sh(argv))
            if keep:
                last = doc
            return float(doc["tps"])

        return one

    interleave(runs(base, False), runs(candidate, True), args.rounds, (base.name, candidate.name))
    return last


# --- one `pgrig run` watched: peak RSS and peak scratch space ------------------------------------


def allocated(directory: Path) -> int:
    """Bytes allocated to the files under `directory` (blocks, not lengths)."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.stat(os.path.join(root, name)).st_blocks * 512
    return total


@dataclass(frozen=True)
class WatchedRun:
    doc: dict[str, Any]  # what `pgrig run --json` printed
    peak_rss: int  # bytes: ru_maxrss of the pgrig process (from wait4; pgbench is far smaller)
    peak_scratch: int  # bytes: the most the run's work directory held (pgbench's log)


def watched_run(argv: Sequence[str], prefix: str, every_s: float) -> WatchedRun:
    """Run `argv` (a `pgrig run ... --json`) with a work directory of its own (PGRIG_WORK_DIR,
    on /dev/shm like pgrig's default) whose allocated space is sampled every `every_s`; the
    bench ends when the run fails."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    work = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    work.chmod(0o755)
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, allocated(work))
            time.sleep(every_s)

    out_path = work.parent / f"{work.name}.json"
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        with open(out_path, "w") as out:
            proc = subprocess.Popen(
                list(argv), stdout=out, env={**os.environ, "PGRIG_WORK_DIR": str(work)}
            )
            _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        watcher.join()
        rc = os.waitstatus_to_exitcode(status)
        if rc != 0:
            sys.exit(f"failed ({rc}): {' '.join(argv)}")
        doc = json.loads(out_path.read_text())
    finally:
        done.set()
        shutil.rmtree(work, ignore_errors=True)
        out_path.unlink(missing_ok=True)
    return WatchedRun(doc, usage.ru_maxrss * 1024, peak)  # ru_maxrss: KiB on Linux
