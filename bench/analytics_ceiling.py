"""How much can `pgrig tune ENV --preset analytics` win at all here? TPC-H power runs at
PostgreSQL's defaults against pgtune-dw and hand-picked settings, interleaved, before the preset
is run for real (bench/preset_ceiling.py's sibling for TPC-H: its runs are `pgrig run -w
tpch:power`, not raw pgbench).

    python bench/analytics_ceiling.py [--scale-factor 1] [--rounds 3] [--pg 18]
        [--lock /work/wt/measure.lock] [--variants defaults,pgtune-dw,jit=off,...]
        (variant names: VARIANTS; the defaults always run)

In a scratch pgrig home: an environment with PostgreSQL's defaults, TPC-H data generated at
nice 19, the server stopped; then (inside `--lock` when given) the server started at this
process's priority and one `pgrig run ENV -w tpch:power --prewarm` per variant per round, every
round in its own shuffled order (analysis/rounds.py), the same substitution seed for every
variant of a round. Per run: Power@Size, the geometric mean of the 22 query times and, per
query, its time, its temp bytes (the run's record), its JIT time (pg_stat_statements'
jit_*_time, the delta over the run, matched by the query identifier EXPLAIN VERBOSE gives) and
its plan's shape (EXPLAIN's node types, to see which settings change which plans). Prints each
run, then per variant the median Power@Size, the per-round ratios to the defaults and the
queries whose time, temp bytes, JIT time or plan differ most from the defaults'.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from lab import client_env, pgrig, scratch_home
from preset_ceiling import locked

from pgrig.analysis import rounds
from pgrig.provision.state.environment import Environment
from pgrig.workloads.tpch import queries

ENV = "anaceiling"
NICE = ["nice", "-n", "19"]

# The hand-picked configuration for TPC-H on a small host: memory for sorts and hashes
# (few sessions), JIT off (its compile time is seconds per query at SF 1, more than it saves
# on 2 cores), SSD costs, the page cache counted, a larger shared_buffers.
GOOD = {
    "work_mem": "256MB",
    "hash_mem_multiplier": "4",
    "jit": "off",
    "random_page_cost": "1.1",
    "effective_cache_size": "16GB",
    "shared_buffers": "4GB",
    "effective_io_concurrency": "200",
    "max_parallel_workers_per_gather": "2",
}
VARIANTS: dict[str, dict[str, str] | str] = {
    "defaults": {},
    "pgtune-dw": "pgtune-dw",
    "jit=off": {"jit": "off"},
    "work_mem=256MB+hash_mem_multiplier=4": {"work_mem": "256MB", "hash_mem_multiplier": "4"},
    "no-parallel-query": {"max_parallel_workers_per_gather": "0"},
    "hand-picked": GOOD,
}

JIT_SQL = (
    "select queryid, sum(jit_generation_time + jit_inlining_time + jit_optimization_time"
    " + jit_emission_time), sum(jit_functions) from pg_stat_statements group by queryid"
)


def profile(name: str) -> dict[str, str]:
    from pgrig.provision import cluster

    env = Environment.load(ENV)
    settings, _notes = cluster.resolve_profile(name, env.major or 0, env.bindir)
    return {k: str(v) for k, v in settings.items()}


def settings_of(spec: dict[str, str] | str) -> dict[str, str]:
    return dict(spec) if isinstance(spec, dict) else profile(spec)


def psql(libpq: dict[str, str], sql: str) -> str:
    bindir = Path(Environment.load(ENV).bindir or "")
    out = subprocess.run([str(bindir / "psql"), "-qAtX", "-c", sql], env=libpq, text=True,
                         capture_output=True, check=False)  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"psql failed: {sql[:80]}\n{out.stderr}")
    return out.stdout


def apply(current: dict[str, str], wanted: dict[str, str]) -> None:
    if current == wanted:
        return
    gone = [k for k in current if k not in wanted]
    pgrig("env", "set", ENV, *[f"{k}={v}" for k, v in wanted.items()],
          *[f"--reset={k}" for k in gone])  # fmt: skip
    current.clear()
    current.update(wanted)


def jit_by_queryid(libpq: dict[str, str]) -> dict[str, tuple[float, int]]:
    out = {}
    for line in psql(libpq, JIT_SQL).splitlines():
        qid, ms, funcs = line.split("|")
        out[qid] = (float(ms or 0), int(funcs or 0))
    return out


def shape(node: dict[str, Any]) -> list[str]:
    """The plan's node types, depth first (what a settings change alters in a plan)."""
    name = node.get("Node Type", "?")
    if "Strategy" in node:
        name += f"({node['Strategy']})"
    out = [name]
    for child in node.get("Plans") or []:
        out += shape(child)
    return out


def explain(libpq: dict[str, str], sql: str) -> tuple[str, str, bool]:
    """(query identifier, plan shape hash, JIT planned) of one query."""
    raw = psql(libpq, f"EXPLAIN (VERBOSE, FORMAT JSON) {sql}")
    doc = json.loads(raw)[0]
    nodes = shape(doc["Plan"])
    digest = hashlib.sha1(" ".join(nodes).encode()).hexdigest()[:8]
    return str(doc.get("Query Identifier", "")), digest, "JIT" in doc


def one_run(seed: int, sf: float, libpq: dict[str, str], timeout: float) -> dict[str, Any]:
    before = jit_by_queryid(libpq)
    argv = ["run", ENV, "-w", "tpch:power", "--prewarm", "--tpch-seed", str(seed), "--json",
            "--query-timeout", str(timeout)]  # fmt: skip
    doc = json.loads(pgrig(*argv))
    after = jit_by_queryid(libpq)
    t = doc["tpch"]
    per: dict[int, dict[str, Any]] = {}
    for planned in queries.plan_stream(sf, seed, 0):
        qid, plan, jit_planned = explain(libpq, planned.sql)
        ev = next(e for e in t["queries"] if e["query"] == planned.query)
        ms0, _ = before.get(qid, (0.0, 0))
        ms1, _ = after.get(qid, (0.0, 0))
        per[planned.query] = {
            "s": ev["seconds"] if ev["status"] == "ok" else None,
            "temp": ev.get("temp_bytes") or 0,
            "jit_ms": ms1 - ms0,
            "plan": plan,
            "jit_planned": jit_planned,
        }
    return {"power": t["power_at_size"], "geomean": t["geomean_s"], "id": doc["id"], "q": per}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale-factor", type=float, default=1.0)
    ap.add_argument("--pg", default="18")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--query-timeout", type=float, default=600)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--lock", default=None, help="flock this file around the timed part only")
    a = ap.parse_args()
    names = list(dict.fromkeys(["defaults", *a.variants.split(",")]))
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise SystemExit(f"--variants: no such variant {unknown[0]!r}; use {', '.join(VARIANTS)}")
    with scratch_home("pgrig-anaceiling-", ENV):
        subprocess.run([*NICE, "pgrig", "env", "create", ENV, "--pg", a.pg, "--profile",
                        "default"], check=True, capture_output=True)  # fmt: skip
        subprocess.run([*NICE, "pgrig", "db", "generate", ENV, "--scenario", "tpch",
                        "--scale-factor", f"{a.scale_factor:g}"], check=True,
                       capture_output=True)  # fmt: skip
        pgrig("env", "stop", ENV)
        results: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        with locked(a.lock):
            t0 = time.monotonic()
            pgrig("env", "start", ENV)
            libpq = client_env(ENV)
            psql(libpq, "create extension if not exists pg_stat_statements")
            current: dict[str, str] = {}
            try:
                for r in range(a.rounds):
                    seed = 1000 + r
                    for name in rounds.shuffled(tuple(names), "analytics-ceiling", r):
                        apply(current, settings_of(VARIANTS[name]))
                        res = one_run(seed, a.scale_factor, libpq, a.query_timeout)
                        results[name].append(res)
                        say(r, name, res)
            except KeyboardInterrupt:  # Ctrl-C: report the whole rounds done
                done = min(len(v) for v in results.values()) if results else 0
                print(f"interrupted: reporting the {done} whole rounds", flush=True)
                for name in results:
                    results[name] = results[name][:done]
                a.rounds = done
            pgrig("env", "stop", ENV)
            wall = time.monotonic() - t0
        report(a, results, wall)


def say(r: int, name: str, res: dict[str, Any]) -> None:
    temp = sum(q["temp"] for q in res["q"].values())
    jit = sum(q["jit_ms"] for q in res["q"].values())
    print(f"round {r + 1} {name}: Power@Size {res['power'] or 0:,.1f}, geomean "
          f"{res['geomean']:.3f} s, temp {temp / 2**20:,.0f} MiB, JIT {jit / 1000:.1f} s "
          f"(run {res['id']})", flush=True)  # fmt: skip


def report(a: argparse.Namespace, results: dict[str, list[dict[str, Any]]], wall: float) -> None:
    print(f"\nanalytics: TPC-H power SF {a.scale_factor:g}, {a.rounds} rounds, PostgreSQL "
          f"{a.pg}; timed part {wall / 60:.1f} min, load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    base = results["defaults"]
    for name, rows in results.items():
        power = [float(x["power"] or 0) for x in rows]
        ratios = [p / float(b["power"] or 1) for p, b in zip(power, base, strict=True)]
        print(f"  {name:40s} median Power@Size {statistics.median(power):8,.1f}; per round vs "
              f"defaults {', '.join(f'{x:.3f}' for x in ratios)}; geomean "
              f"{statistics.median(x['geomean'] for x in rows):.3f} s")  # fmt: skip
    print("\nper query (medians over the rounds): time s, temp MiB, JIT s, plan shape")
    names = list(results)
    for q in range(1, 23):
        cells = []
        for name in names:
            rows = [x["q"][q] for x in results[name]]
            s = statistics.median(r["s"] or float("nan") for r in rows)
            temp = statistics.median(r["temp"] for r in rows) / 2**20
            jit = statistics.median(r["jit_ms"] for r in rows) / 1000
            cells.append(f"{s:7.2f} {temp:5.0f} {jit:4.1f} {rows[-1]['plan']}")
        print(f"  Q{q:<2d} " + " | ".join(cells))
    print("  columns: " + " | ".join(names))


if __name__ == "__main__":
    main()
