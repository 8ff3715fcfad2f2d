"""Each tuning preset end to end: `pgrig tune ENV --preset NAME` on a fresh environment with
PostgreSQL's own settings, its report written to docs/reports/tune-<preset>.md.

In a scratch pgrig home per preset: an environment (profile `default`; for
write-heavy-slow-disk created with `--disk-limit`), then the preset, which generates its data,
searches, confirms (best vs the defaults and vs pgtune-oltp, or the preset's reference:
pgtune-dw for analytics; interleaved, sequential looks) and
ablates (each changed knob or group put back, interleaved with the best). The report keeps the
verdicts with bounds, the ablation's shares, the search importances and the evidence; the bench
prints the verdicts and the wall time, and says when a run did not finish.

    python bench/tune_presets.py                                # the three presets
    python bench/tune_presets.py read-heavy --pg 18             # one preset
    python bench/tune_presets.py seed000                        # seed 000's task (below)
    python bench/tune_presets.py read-heavy --smoke             # minutes: tiny trials, scale 2

`seed000` is not a preset: seed 000's own task ("maximum performance, ignoring crash safety")
on its workload scaled to this machine, pgbench tpcb at scale 100 with 20 clients, searched
with --allow-unsafe, then confirmed and ablated; its report is docs/reports/tune-seed000.md.
On a shared machine run each target under the measurement lock, one per hold:
`flock /work/wt/measure.lock python bench/tune_presets.py read-heavy`.
"""

from __future__ import annotations

import argparse
import datetime
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lab import scratch_home

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reports"
ENV = "preset"
SMOKE = ["--scale", "2", "--trials", "2", "--duration", "3s", "--warmup", "0",
         "--confirm-repeats", "2", "--ablation-repeats", "2", "--ablation-units", "2"]  # fmt: skip
# TPC-H's power test runs to its end: no --duration, its data by scale factor
SMOKE_TPCH = ["--scale-factor", "0.01", "--trials", "2", "--confirm-repeats", "2",
              "--ablation-repeats", "2", "--ablation-units", "2"]  # fmt: skip


def pgrig(*args: str, stream: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["pgrig", *args], text=True, capture_output=not stream, check=False)


def disk_limit_supported() -> bool:
    return "--disk-limit" in pgrig("env", "create", "--help").stdout


SEED000 = "seed000"
# seed 000's workload scaled to a 2-core machine, its question asked with --allow-unsafe; the
# trials and rounds fit one ~25 min hold of the measurement lock
SEED000_TUNE = ["--allow-unsafe", "--workload", "pgbench:tpcb", "--scale", "100", "--clients",
                "20", "--threads", "2", "--trials", "5", "--duration", "15s", "--warmup", "5s",
                "--confirm-repeats", "6", "--ablation-repeats", "5",
                "--ablation-units", "4"]  # fmt: skip


def run_preset(name: str, a: argparse.Namespace) -> None:
    from pgrig.tune import presets

    seed = name == SEED000
    preset = presets.get("write-heavy-slow-disk" if seed else name)
    study = f"tune-{name}"
    create = ["env", "create", ENV, "--pg", a.pg, "--profile", "default"]
    if preset.needs_disk_limit and not seed:
        if not disk_limit_supported():
            print(f"{name}: SKIPPED: this pgrig has no `env create --disk-limit` (issue 32 item 3)")
            return
        create += ["--disk-limit", a.disk_limit or preset.suggested_disk_limit]
    smoke = SMOKE_TPCH if preset.scale_factor is not None else SMOKE
    extra = smoke if a.smoke else []
    what = SEED000_TUNE if seed else ["--preset", name]
    command = ["tune", ENV, *what, *extra, *a.tune_args, "--name", study]
    t0 = time.monotonic()
    started = datetime.datetime.now(datetime.UTC)
    with scratch_home(f"pgrig-tune-{name}-", ENV, keep=a.keep) as home:
        made = pgrig(*create)
        if made.returncode != 0:
            sys.exit(f"{name}: pgrig {' '.join(create)} failed: {made.stderr}")
        out = home / "out"
        proc = pgrig(*command, "--format", "md", "--out", str(out), stream=True)
        wall = time.monotonic() - t0
        status = "finished" if proc.returncode == 0 else f"DID NOT FINISH (exit {proc.returncode})"
        print(f"{name}: {status}; wall time {wall / 60:.1f} min", flush=True)
        report = out / f"{study}.md"
        if not report.exists():
            print(f"{name}: no report written")
            return
        if a.smoke:
            print(f"{name}: smoke run: report {report} not copied to docs/")
            return
        DOCS.mkdir(parents=True, exist_ok=True)
        for f in out.iterdir():
            if f.suffix == ".svg":
                shutil.copy(f, DOCS / f.name)
        header = (
            f"<!-- written by bench/tune_presets.py -->\n"
            f"Command: `pgrig env create {ENV} --pg {a.pg} --profile default"
            + (f" --disk-limit {a.disk_limit or preset.suggested_disk_limit}"
               if preset.needs_disk_limit and not seed else "")
            + f"` then `pgrig {' '.join(command)}`; started {started:%Y-%m-%d %H:%M} UTC, "
            f"wall time {wall / 60:.1f} min, {status}. The machine (2 cores) may have been "
            "shared with other work: spreads are wider than on a quiet host.\n\n"
        )  # fmt: skip
        (DOCS / f"tune-{name}.md").write_text(header + report.read_text())
        print(f"{name}: report docs/reports/tune-{name}.md")


def main() -> None:
    from pgrig.tune import presets

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("presets", nargs="*", default=list(presets.PRESETS),
                    help=f"preset names, or {SEED000}")  # fmt: skip
    ap.add_argument("--pg", default="18", help="PostgreSQL major (default 18)")
    ap.add_argument("--disk-limit", default=None, help="for write-heavy-slow-disk")
    ap.add_argument("--smoke", action="store_true", help="tiny trials: checks the path only")
    ap.add_argument("--keep", action="store_true", help="keep the scratch homes")
    ap.add_argument("--tune-args", nargs=argparse.REMAINDER, default=[],
                    help="more flags for pgrig tune (they override the preset's)")  # fmt: skip
    a = ap.parse_args()
    for name in a.presets:
        if name != SEED000:
            presets.get(name)  # an unknown name fails before anything is made
    for name in a.presets:
        run_preset(name, a)


if __name__ == "__main__":
    main()
