"""The bar of issue 13: `pgrig tune` finds a configuration that is confirmed faster than
PostgreSQL's defaults and not slower than pgtune-oltp.

In a scratch pgrig home: a PostgreSQL environment with the `default` profile (PostgreSQL's own
settings), pgbench data at scale 10, then `pgrig tune` with 8 clients, 20 trials of 20 s and a
confirmation of interleaved repeats; prints the confirmation verdicts (best vs defaults, best vs
pgtune-oltp, from the comparison engine), whether the bar is met, and removes everything.

    python bench/tune_bar.py                                   # the bar: about 15 minutes
    python bench/tune_bar.py --trials 3 --duration 3 --scale 1 --confirm-repeats 2   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from lab import scratch_home

ENV = "bar"
STUDY = "tune-bar"


def pgrig(*args: str, stream: bool = False) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["pgrig", *args], text=True, capture_output=not stream, check=False)
    if proc.returncode != 0:
        sys.exit(f"pgrig {' '.join(args)} failed ({proc.returncode}): {proc.stderr or ''}")
    return proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pg", default="15", help="PostgreSQL major (default 15)")
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--confirm-repeats", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the scratch home (and report)")
    a = ap.parse_args()

    t0 = time.monotonic()
    try:
        with scratch_home("pgrig-tune-bar-", ENV, keep=a.keep) as home:
            pgrig("env", "create", ENV, "--pg", a.pg, "--profile", "default")
            pgrig("db", "generate", ENV, "--scenario", "pgbench", "--scale", str(a.scale))
            print(
                f"environment {ENV}: PostgreSQL {a.pg} defaults, pgbench scale {a.scale}",
                flush=True,
            )
            pgrig(
                "tune", ENV, "--workload", "pgbench:tpcb", "--clients", str(a.clients),
                "--threads", str(a.threads), "--trials", str(a.trials),
                "--duration", f"{a.duration:g}s", "--confirm-repeats", str(a.confirm_repeats),
                "--name", STUDY, "--format", "md",
                stream=True,
            )  # fmt: skip
            verdicts(a)
            print(f"report: {home / 'reports' / STUDY / (STUDY + '.md')}")
    finally:
        print(f"wall time {time.monotonic() - t0:.0f} s")


def verdicts(a: argparse.Namespace) -> None:
    """The confirmation verdicts, from the archive through the one comparison engine."""
    from pgrig.archive.store import Archive
    from pgrig.tune import confirm
    from pgrig.tune.space import UNSAFE

    store = Archive()
    study = store.get_study(STUDY)
    best = study.extra.get("best") or {}
    runs = store.study_runs(STUDY)
    misrate = confirm.misrate_of(study.extra)  # the look that ended the confirmation
    found = {v.question: v for v in confirm.verdicts(runs, "tps", 0.02, misrate)}
    words = {}
    for question, label in (("best vs baseline", "best vs defaults"),
                            ("best vs pgtune-oltp", "best vs pgtune-oltp")):  # fmt: skip
        v = found[question]
        c = v.comparison
        words[label] = c.verdict if c is not None else None
        print(f"{label}: {c.describe() if c is not None else 'no verdict: ' + str(v.reason)}")
    unsafe = sorted(set(best.get("settings", {})) & set(UNSAFE))
    print("best configuration: " + json.dumps(best.get("settings", {}), sort_keys=True))
    met = words["best vs defaults"] == "faster" and words["best vs pgtune-oltp"] not in (
        "slower",
        None,
    )
    print(
        f"bar ({a.trials} trials of {a.duration:g} s, {a.clients} clients, scale {a.scale}): "
        f"{'MET' if met and not unsafe else 'NOT MET'} (best vs defaults must be faster, "
        f"best vs pgtune-oltp not slower, no unsafe setting: {unsafe or 'none used'})"
    )


if __name__ == "__main__":
    main()
