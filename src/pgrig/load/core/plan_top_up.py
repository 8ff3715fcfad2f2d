"""Plans for rare transaction types, after the measured window (insights/sampling.py).

auto_explain samples every statement with one rate, kept within a budget of plans per run
and a cap per second. Beside a hot script, a rare one gets its share of that budget, which can
be no plan at all. Once the load has ended (completed runs of pgbench scripts on this
machine), each script whose statements expected fewer than sampling.MIN_PER_SCRIPT plans runs
alone: one client, that many transactions minus the expected ones, with auto_explain logging
every statement of its session (PGOPTIONS; session settings of a superuser, the managed
environment's own). The measured window is over, so its figures are untouched; the top-up
runs real transactions (a write script writes a few more rows) and says so: rec.extra
["plan_top_up"] and the plans document's "top_up" name the scripts, their expected plans and
the transactions run, and each statement counts its top-up plans apart ("top_up_samples").
"""

from __future__ import annotations

import subprocess
import time

from pgrig.insights import sampling
from pgrig.insights.collector import Collection
from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines.process import die_with_parent
from pgrig.provision.state.environment import Environment, without_libpq_vars
from pgrig.record.documents import PlanTopUpDoc, PlanTopUpScript
from pgrig.record.run import RunRecord
from pgrig.request import RunRequest

MAX_SCRIPTS = 10
TIMEOUT_S = 30.0
EXPLAIN_ALL = "-c auto_explain.log_min_duration=0 -c auto_explain.sample_rate=1"


def run(
    collection: Collection, spec: RunRequest, env: Environment, dbname: str, rec: RunRecord
) -> None:
    """Top up the plans of the scripts that lack them (never raises: a failure is recorded)."""
    if not env.managed or spec.is_sysbench or not spec.scripts or not rec.scripts:
        return
    counts = [(s.name, int(s.transactions or 0)) for s in rec.scripts]
    if len(counts) != len(spec.scripts):
        return
    short = collection.plan_shortfall(counts)[:MAX_SCRIPTS]
    if not short:
        return
    doc: PlanTopUpDoc = {
        "why": "auto_explain's one sample rate left these transaction types with fewer than "
        f"{sampling.MIN_PER_SCRIPT} expected plans: each ran alone after the window with every "
        "statement explained",
        "from": time.time(),
        "scripts": [],
    }
    client_env = {**without_libpq_vars(), **env.libpq_env(dbname), "PGOPTIONS": EXPLAIN_ALL}
    for item in short:
        script = spec.scripts[int(item["script_no"])]
        one = spec.model_copy(
            update={
                "scripts": [script.model_copy(update={"weight": 1})],
                "clients": 1,
                "threads": 1,
                "duration_s": None,
                "transactions_per_client": int(item["top_up"]),
                "warmup_s": 0.0,
                "rate": None,
                "latency_limit_ms": None,
                "via": "direct",
            }
        )
        entry = PlanTopUpScript(
            name=item["name"],
            transactions=item["transactions"],
            expected_plans=item["expected_plans"],
            ran=int(item["top_up"]),
        )
        try:
            argv = pgbench_command.build_pgbench_command(
                env.binary("pgbench"), one, log_prefix="", total_seconds=None, progress=False
            )
            done = subprocess.run(
                argv,
                env=client_env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
                check=False,
                preexec_fn=die_with_parent,
            )
            if done.returncode != 0:
                entry["error"] = (done.stderr.strip().splitlines() or ["pgbench failed"])[-1]
        except Exception as e:  # the run is measured already: its plans are only fewer
            entry["error"] = f"{type(e).__name__}: {e}"
        doc["scripts"].append(entry)
    doc["to"] = time.time()
    rec.extra["plan_top_up"] = doc
    collection.top_up = doc
