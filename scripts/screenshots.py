#!/usr/bin/env python3
"""Screenshot every page of the results UI into out/screenshots/*.png, for a person to look at.

    python scripts/screenshots.py [--archive URL | --real] [--out DIR]

With --archive (or PGRIG_ARCHIVE) the pages show that archive: the latest ok run, the two
latest ok runs compared, and the first iteration and sweep studies. --real makes a real one
first (about 3 minutes): a PostgreSQL 15 environment in a temporary pgrig home, pgbench data,
two runs, a 3-iteration study and a clients x protocol sweep, all through the `pgrig` CLI; the
environment is destroyed afterwards. Without either, a temporary archive is filled with
synthetic runs and two studies. Chromium is Debian's (/usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from pgrig.archive.records import RunFilter
from pgrig.archive.store import Archive
from pgrig.web.app import create_app

# The synthetic runs and the browser harness live with the tests (they are not part of pgrig).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sample_data
import web_harness

PORTS = (56700, 56749)
VIEWPORT = {"width": 1440, "height": 900}  # a laptop screen


def synthetic_archive(directory: Path) -> str:
    url = f"sqlite:///{directory / 'archive.sqlite'}"
    archive = Archive(url)
    sample_data.fill(archive, 40, with_details=True)
    sample_data.iteration_study(archive)
    sample_data.sweep_study(archive)
    archive.close()
    return url


# Both real studies use the environment and data that real_archive() makes.
REAL_TARGET = """\
[environment]
name = "shots"
version = "15"
[dataset]
scenario = "pgbench"
scale = 2
"""
REAL_ITERATIONS = f"""\
[study]
name = "tune-demo"
description = "A short real iteration study"
repeats = 2
{REAL_TARGET}[run]
workload = "pgbench:tpcb-like"
clients = 4
threads = 2
duration = "8s"
warmup = "2s"
[[iterations]]
name = "defaults"
[[iterations]]
name = "shared_buffers 256MB"
settings = {{ shared_buffers = "256MB" }}
[[iterations]]
name = "synchronous_commit off"
settings = {{ synchronous_commit = "off" }}
"""
REAL_SWEEP = f"""\
[study]
name = "clients-demo"
description = "A short real sweep over clients and protocol"
repeats = 1
{REAL_TARGET}[run]
workload = "pgbench:select-only"
duration = "6s"
warmup = "2s"
[sweep]
clients = [1, 2, 4, 8]
protocol = ["simple", "prepared"]
x = "clients"
"""


def real_archive(home: Path) -> str:
    """Runs and studies made by pgrig itself against a real PostgreSQL 15 (see module doc)."""
    home.chmod(0o755)  # the server runs as another OS user and must reach its data directory
    env = {**os.environ, "PGRIG_HOME": str(home)}
    env.pop("PGRIG_ARCHIVE", None)

    def pgrig(*args: str) -> None:
        print("pgrig " + " ".join(args), file=sys.stderr)
        subprocess.run(["pgrig", *args], env=env, check=True, stdout=subprocess.DEVNULL)

    (home / "iterations.toml").write_text(REAL_ITERATIONS)
    (home / "sweep.toml").write_text(REAL_SWEEP)
    port = str(web_harness.free_port(56710, 56719))
    load = ["--workload", "pgbench:tpcb-like", "-c", "4", "-j", "2", "--duration", "10"]
    try:
        pgrig("env", "create", "shots", "--pg", "15", "--port", port)
        pgrig("db", "generate", "shots", "--scenario", "pgbench", "--scale", "2")
        pgrig("run", "shots", *load, "--warmup", "3", "--note", "defaults")
        pgrig(
            "run",
            "shots",
            *load,
            "--warmup",
            "3",
            "--set",
            "synchronous_commit=off",
            "--note",
            "synchronous_commit=off <script>alert(1)</script>",
            "--tag",
            "kind=demo",
        )
        pgrig("study", "run", str(home / "iterations.toml"))
        pgrig("study", "run", str(home / "sweep.toml"))
    finally:
        subprocess.run(
            ["pgrig", "env", "destroy", "shots", "--yes"], env=env, check=False, capture_output=True
        )
    return f"sqlite:///{home / 'archive.sqlite'}"


def pages(archive: Archive) -> dict[str, str]:
    """name → path of each page worth a screenshot in this archive."""
    out = {"runs": "/runs"}
    ok = [r for r in archive.list_runs(RunFilter(status="ok"), limit=200) if r.tps is not None]
    if ok:
        out["run"] = f"/runs/{ok[0].id}"
    if len(ok) >= 2:
        same = [r for r in ok[1:] if r.workload == ok[0].workload] or ok[1:]
        out["compare"] = f"/compare?ids={same[0].id},{ok[0].id}"
    iterations = [s for s in archive.list_studies() if s.kind == "iterations"]
    if iterations:  # first vs last iteration, all their repeats: a verdict from the repeats
        runs = [r for r in archive.study_runs(iterations[0].name) if r.status == "ok"]
        if runs and runs[0].study_point != runs[-1].study_point:
            first, last = (
                ",".join(str(r.id) for r in runs if r.study_point == p.study_point)
                for p in (runs[0], runs[-1])
            )
            out["compare"] = f"/compare?group={first}&group={last}"
    for s in archive.list_studies():
        key = "study-sweep" if s.kind == "sweep" else "study-iterations"
        if key not in out and archive.count_runs(RunFilter(study=s.name)):
            out[key] = f"/studies/{s.name}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archive", default=os.environ.get("PGRIG_ARCHIVE"))
    ap.add_argument("--real", action="store_true", help="make a real archive first (PG 15)")
    ap.add_argument("--out", default="out/screenshots", type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pgrig-shots-", dir="/tmp") as tmp:
        if args.archive:
            url = args.archive
        elif args.real:
            url = real_archive(Path(tmp))
            os.environ["PGRIG_HOME"] = tmp  # artifacts are found under this home
        else:
            url = synthetic_archive(Path(tmp))
        app = create_app(url)
        todo = pages(app.state.archive)
        port = web_harness.free_port(*PORTS)
        with web_harness.running(app, port) as base, sync_playwright() as pw:
            browser = web_harness.launch_chromium(pw)
            page = browser.new_page(viewport=VIEWPORT)
            for name, path in todo.items():
                response = page.goto(base + path)
                if response is None or response.status != 200:
                    print(
                        f"{name}: {path} answered {response and response.status}", file=sys.stderr
                    )
                    continue
                charts = page.locator("svg.chart polyline, svg.chart circle").count()
                target = args.out / f"{name}.png"
                page.screenshot(path=str(target), full_page=True)
                print(f"{target}  {path}  ({charts} chart marks)")
            browser.close()
        app.state.archive.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
