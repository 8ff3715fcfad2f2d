"""What a PostgreSQL server log holds: records by kind, their bytes, and bytes per minute.

    PYTHONPATH=src python bench/server_log_kinds.py FILE [FILE...]

Kinds: auto_explain plans, checkpoints, autovacuum/autoanalyze, lock waits, temp files,
configuration reloads (SIGHUP and "parameter ... changed"), errors (ERROR/FATAL/PANIC),
warnings, other LOG records, and lines that are not the server's. Per minute is over the span
between the first and the last timestamped record of each file.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

from pgrig.insights.log_excerpt import kind_of
from pgrig.insights.server_log import PART_SEVERITIES, line_severity, parse_time

_LOG_KINDS = (
    ("checkpoint", re.compile(r"LOG:  (checkpoint|restartpoint) (starting|complete)")),
    ("autovacuum", re.compile(r"LOG:  automatic (aggressive )?(vacuum|analyze)")),
    ("lock wait", re.compile(r"LOG:  process \d+ (still waiting|acquired|detected)")),
    ("temp file", re.compile(r"LOG:  temporary file: ")),
    ("reload", re.compile(r'LOG:  (received SIGHUP|parameter ".*" changed)')),
)


def detailed_kind(first_line: str) -> str:
    kind = kind_of(first_line)
    if kind == "log":
        for name, pattern in _LOG_KINDS:
            if pattern.search(first_line):
                return name
        return "other LOG"
    return kind


def main() -> None:
    for name in sys.argv[1:]:
        counts: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        first = last = None
        kind = None
        with open(name, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                cont = line.startswith("\t") or line_severity(line) in PART_SEVERITIES
                if not cont or kind is None:
                    kind = detailed_kind(line)
                    counts[kind] += 1
                    ts = parse_time(line)
                    if ts is not None:
                        first = ts if first is None else first
                        last = ts
                sizes[kind] += len(raw)
        total = sum(sizes.values())
        minutes = ((last - first) / 60) if first is not None and last and last > first else None
        span = f"{minutes * 60:.0f} s" if minutes else "?"
        print(f"{name}: {total / 2**20:.2f} MiB over {span}")
        for k, n in sizes.most_common():
            per_min = f"{n / 1024 / minutes:10.1f} KiB/min" if minutes else ""
            print(f"  {k:<12} {counts[k]:>9,} records {n / 1024:10.1f} KiB "
                  f"{100 * n / total:5.1f}% {per_min}")  # fmt: skip


if __name__ == "__main__":
    main()
