"""What does a study say when both configurations are the same? Anything but "faster" or
"slower" is right ("equivalent" at best; "inconclusive" says more repeats are needed), so
faster/slower are false alarms: at most about the misrate (5%) of tries should raise one.

    python bench/false_alarms.py [--tries 10] [--repeats 5] [--duration 4]

Each try is one `pgrig study run` of two iterations with identical settings (pgbench TPC-B,
scale 1, interleaved repeats) in a scratch home; the verdict of iteration 1 against iteration
0 is read from the study's Markdown report. Prints each verdict and the tally per verdict.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

STUDY = """
[study]
name = "{name}"
repeats = {repeats}
order = "interleaved"
threshold = 0.02

[environment]
version = "15"
settings = {{ shared_buffers = "64MB" }}

[dataset]
scenario = "pgbench"
scale = 1

[run]
workload = "pgbench:tpcb-like"
clients = 2
threads = 2
duration = "{duration}s"
warmup = "1s"

[[iterations]]
name = "baseline"

[[iterations]]
name = "the same again"
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=int, default=4)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="pgrig-false-alarms-", dir="/tmp"))
    home.chmod(0o755)
    env = {**os.environ, "PGRIG_HOME": str(home)}
    env.pop("PGRIG_ARCHIVE", None)
    verdicts = []
    try:
        for k in range(args.tries):
            name = f"same-{k}"
            study = home / f"{name}.toml"
            study.write_text(STUDY.format(name=name, repeats=args.repeats, duration=args.duration))
            proc = subprocess.run(
                ["pgrig", "study", "run", str(study), "--format", "md"],
                env=env, capture_output=True, text=True, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                sys.exit(f"study {name} failed:\n{proc.stderr[-2000:]}")
            report = (home / "reports" / name / f"{name}.md").read_text()
            line = next(ln for ln in report.splitlines() if ln.startswith("| 1 | "))
            cell = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]][5]
            verdicts.append(cell)
            print(f"try {k + 1}: {cell.replace('<br>', ' ').replace(chr(92), '')}", flush=True)
            subprocess.run(["pgrig", "env", "destroy", f"{name}-pg15", "--yes"], env=env,
                           capture_output=True, check=False)  # fmt: skip
    finally:
        shutil.rmtree(home, ignore_errors=True)
    words = Counter(v.split("<br>")[-1].split(" (")[0].removesuffix(" *") for v in verdicts)
    alarms = words["faster"] + words["slower"]
    tally = ", ".join(f"{word} {count}" for word, count in words.most_common())
    print(f"{len(verdicts)} tries: {tally}; false alarms (faster or slower): {alarms}")


if __name__ == "__main__":
    main()
