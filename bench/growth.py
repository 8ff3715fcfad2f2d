"""Does anything pgrig keeps grow with the length of a run where it should not?

    PYTHONPATH=src python bench/growth.py [--pg 15] [--scale 10] [--short 20] [--long 120]
                                          [--modes auto,full,sampled] [--clients 2]

In a scratch home (its own archive, environment "growth", pgbench data at --scale), one
select-only run of --short and one of --long seconds per --txlog mode. For each run it prints
pgrig's peak RSS (ru_maxrss of the `pgrig run` process from wait4), the peak of the scratch
space (the run's work directory: pgbench's log), and what the run left on disk, by part:
the archive (the file's growth; per series kind and per blob kind, as stored), the artifacts
(per file, compressed). Then, per part, the growth exponent between the two lengths,
log(long / short) / log(long_s / short_s): about 0 when the part is bounded, about 1 when it
grows linearly with the run; and bytes per minute of run. A part that should be bounded but
grows (exponent > 0.5 and at least 64 KiB over the long run) is marked "GROWS".

Expected to be linear: the per-second series (one row per second is the data), the full
transaction log while it is read (streamed and freed: its scratch peak stays flat).
Everything else (RSS, the sampled log, insights, statements, plans, waits, host facts,
settings, the server log a run keeps) should not be. Shown for information, never flagged:
what the server wrote during the run ("server log written", from the run's extra.server_log;
read by the run, not kept: auto_explain's share is bounded by the plan budget,
insights/sampling.py: 5,000 plans a run at most 50 a second, so it levels off after ~100 s;
the rest is whatever the workload makes the server say) and the size of the server's own log
file after the run (the run cuts what it read once that passes KEEP_BYTES + MIN_CUT_BYTES of
provision/server/log_file.py, so it stays under a few MiB plus one run's part).

Figures on a busy shared machine vary: read directions, not digits.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sqlite3
from pathlib import Path

from lab import pgrig, scratch_home, watched_run  # bench/ is on sys.path when a bench runs

ENV = "growth"
BOUNDED_FLOOR = 64 * 1024  # a part smaller than this over the long run is not worth a flag
LINEAR_OK = ("series:", "artifact:pgbench", "artifact:txlog")
INFORMATION = ("server log written", "server's log file")  # never flagged (see above)


def one_run(home: Path, mode: str, seconds: int, clients: int) -> dict:
    """One `pgrig run`: its figures, peak RSS and scratch, and what it stored, by part."""
    archive = home / "archive.sqlite"
    size_before = archive.stat().st_size if archive.exists() else 0
    argv = ["pgrig", "run", ENV, "-w", "pgbench:select-only", "-c", str(clients), "-j", "1"]
    argv += ["--duration", str(seconds), "--txlog", mode, "--json", "--tag", "bench=growth"]
    run = watched_run(argv, "pgrig-growth-", every_s=0.2)
    rec = run.doc
    parts: dict[str, int] = {}
    with sqlite3.connect(archive) as db:
        for table, label in (("run_series", "series"), ("run_blobs", "blob")):
            rows = db.execute(f"SELECT kind, length(data) FROM {table} WHERE run_id = ?",
                              (rec["id"],))  # fmt: skip
            for kind, n in rows:
                parts[f"{label}:{kind}"] = int(n)
    art_root = home / "artifacts"
    for rel in (rec.get("artifacts") or {}).values():
        path = art_root / rel
        with contextlib.suppress(OSError):
            name = path.name.removesuffix(".gz")
            parts[f"artifact:{name}"] = parts.get(f"artifact:{name}", 0) + path.stat().st_size
    parts["archive file"] = archive.stat().st_size - size_before
    server_log = rec.get("server_log") or {}
    if "written_bytes" in server_log:
        parts["server log written"] = int(server_log["written_bytes"])
    with contextlib.suppress(OSError):  # the server's own file, after the run
        parts["server's log file"] = (home / "envs" / ENV / "server.log").stat().st_size
    return {
        "mode": mode,
        "requested": rec.get("txlog"),
        "seconds": seconds,
        "measured_s": rec.get("measured_s") or seconds,
        "tps": rec.get("tps"),
        "rss": run.peak_rss,
        "scratch": run.peak_scratch,
        "parts": parts,
    }


def mib(n: float) -> str:
    return f"{n / 2**20:8.2f} MiB"


def report(short: dict, long: dict) -> list[str]:
    """Per part: bytes of each run, per minute of the long run, the growth exponent."""
    lines = []
    scale = math.log(long["seconds"] / short["seconds"])
    figures = {"pgrig peak RSS": (short["rss"], long["rss"]),
               "scratch peak": (short["scratch"], long["scratch"])}  # fmt: skip
    for part in sorted(set(short["parts"]) | set(long["parts"])):
        figures[part] = (short["parts"].get(part, 0), long["parts"].get(part, 0))
    flagged = []
    minutes = long["measured_s"] / 60
    for part, (a, b) in figures.items():
        exponent = math.log(b / a) / scale if a > 0 and b > 0 else float("nan")
        mark = ""
        if exponent > 0.5 and b >= BOUNDED_FLOOR and part not in ("archive file", *INFORMATION):
            mark = "linear (expected)" if part.startswith(LINEAR_OK) else "GROWS"
            if mark == "GROWS":
                flagged.append(part)
        lines.append(
            f"  {part:<28} {mib(a)} {mib(b)}   {b / 1024 / minutes:9.1f} KiB/min"
            f"   exponent {exponent:5.2f}  {mark}"
        )
    lines.append("  growing where it should not: " + (", ".join(flagged) or "nothing"))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", default="15")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--short", type=int, default=20)
    ap.add_argument("--long", type=int, default=120)
    ap.add_argument("--modes", default="auto,full,sampled")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the scratch home")
    args = ap.parse_args()
    with scratch_home("pgrig-growth-home-", ENV, keep=args.keep) as home:
        pgrig("env", "create", ENV, "--pg", args.pg)
        pgrig("db", "generate", ENV, "--scale", str(args.scale))
        print(
            f"home {home}; select-only, {args.clients} clients; {args.short} s and "
            f"{args.long} s per mode (busy shared machine: directions, not digits)",
            flush=True,
        )
        for mode in args.modes.split(","):
            runs = [one_run(home, mode, s, args.clients) for s in (args.short, args.long)]
            print(f"\n--txlog {mode} (used: {runs[0]['requested']}, {runs[1]['requested']}); "
                  f"TPS {runs[0]['tps']:,.0f} / {runs[1]['tps']:,.0f}", flush=True)  # fmt: skip
            print(f"  {'part':<28} {args.short:>8} s     {args.long:>8} s     "
                  "per minute (long)   exponent")  # fmt: skip
            for line in report(*runs):
                print(line, flush=True)


if __name__ == "__main__":
    main()
