"""What one `pgrig` command costs in CPU, most of it starting Python and importing.

The test suite starts pgrig about a thousand times and is CPU-bound on these 2-core machines
(process accounting of one `make test`: the pgrig processes used about 46% of all the CPU,
the servers' backends 26%, the pytest workers 15%), and users script pgrig: a start's cost is
paid by every command. In a scratch home with one environment and two runs, each command is
run --repeat times; printed: the median CPU seconds (user + system of the command and its
children, pgbench included for `run`), the wall seconds, and bare `python -c pass` beside them.

    python bench/cli_start_cost.py [--repeat 5] [--pg 18]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

from lab import pgrig, scratch_home

ENV = "start-cost"
COMMANDS = [
    ["--version"],
    ["env", "list"],
    ["env", "show", ENV],
    ["env", "set", ENV, "work_mem=8MB"],
    ["runs", "list"],
    ["runs", "show", "1"],
    ["runs", "compare", "1", "2"],
    ["run", ENV, "-w", "pgbench:nosuch", "-T", "1"],  # refused: the cost of saying no
    ["run", ENV, "-w", "pgbench:select-only", "-c", "1", "-T", "1"],
]


def measure(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median CPU seconds (this child and its children) and median wall seconds."""
    cpu, wall = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        subprocess.run(argv, capture_output=True, check=False)
        wall.append(time.monotonic() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pg", default="18")
    args = ap.parse_args()
    with scratch_home("pgrig-start-cost-", ENV):
        pgrig("env", "create", ENV, "--pg", args.pg)
        pgrig("db", "generate", ENV, "--scale", "1")
        for _ in range(2):
            pgrig("run", ENV, "-w", "pgbench:select-only", "-c", "1", "-T", "1")
        cpu, wall = measure([sys.executable, "-c", "pass"], args.repeat)
        print(f"{'python -c pass':55} {cpu:5.2f} CPU-s {wall:5.2f} s wall")
        for command in COMMANDS:
            cpu, wall = measure(["pgrig", *command], args.repeat)
            print(f"{'pgrig ' + ' '.join(command):55} {cpu:5.2f} CPU-s {wall:5.2f} s wall")


if __name__ == "__main__":
    main()
