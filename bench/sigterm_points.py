"""SIGTERM at random points of `pgrig run`, many times, and what the archive says after each:
the loop behind tests/integration/test_kill_points_pg.py's "end" phase, long enough to hit
windows of a few microseconds (a run found "lost" in CI came from one). Run it beside CPU load
(e.g. `for i in 1 2 3; do timeout 900 sh -c 'while :; do :; done' & done`): the windows widen.

    python bench/sigterm_points.py --runs 50 --after 0 1.2     # after the first pgbench ends
    python bench/sigterm_points.py --runs 50 --after 0 0.4 --the-load  # after the run's own -T

Each line: the delay, pgrig's exit code and the run's status ("none": the signal came before the
run's row). A status other than "aborted" or "ok", or an aborted run without exit 143, prints
pgrig's stderr; the last line counts the outcomes.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import signal
import subprocess
import time

import psutil
from lab import scratch_home

ENV = "sigterm"
RUN = ["run", ENV, "-w", "pgbench:select-only", "-c", "2", "--duration", "3", "--txlog", "full",
       "--set", "work_mem=3MB", "--json"]  # fmt: skip


def pgrig(*args: str) -> str:
    return subprocess.run(["pgrig", *args], capture_output=True, text=True, check=True).stdout


def pgbench_under(proc: subprocess.Popen[str], the_load: bool) -> bool:
    """Whether a pgbench runs below pgrig (`the_load`: the run's own, with -T)."""
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    for child in children:
        try:
            if child.name() == "pgbench" and (not the_load or "-T" in child.cmdline()):
                return True
        except psutil.Error:
            continue
    return False


def wait_for(cond: bool, proc: subprocess.Popen[str], the_load: bool) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if pgbench_under(proc, the_load) == cond:
            return
        time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--after", type=float, nargs=2, default=(0.0, 1.2), metavar=("LOW", "HIGH"))
    ap.add_argument("--the-load", action="store_true", help="time from the run's own pgbench")
    a = ap.parse_args()
    outcomes: collections.Counter[str] = collections.Counter()
    with scratch_home("pgrig-sigterm-", ENV):
        pgrig("env", "create", ENV, "--pg", "15")
        pgrig("db", "generate", ENV, "--scenario", "pgbench", "--scale", "1")
        for i in range(a.runs):
            before = {r["id"] for r in json.loads(pgrig("runs", "list", "--json"))}
            proc = subprocess.Popen(["pgrig", *RUN], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)  # fmt: skip
            wait_for(True, proc, a.the_load)
            if not a.the_load:  # from the first pgbench (its --version comes first)
                wait_for(False, proc, a.the_load)
            delay = random.uniform(*a.after)
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
            runs = json.loads(pgrig("runs", "list", "--json"))
            new = [r["status"] for r in runs if r["id"] not in before]
            status = new[0] if new else "none"
            outcome = f"{status}, exit {proc.returncode}"
            outcomes[outcome] += 1
            print(f"{i + 1}: after {delay:.3f} s: {outcome}", flush=True)
            if status not in ("aborted", "ok", "none") or (
                status == "aborted" and proc.returncode != 143
            ):
                print(err, flush=True)
    print("; ".join(f"{n} {o}" for o, n in outcomes.most_common()))


if __name__ == "__main__":
    main()
