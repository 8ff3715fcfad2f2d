"""Which per-transaction log a pgbench run keeps: full, sampled or off (`--txlog`).

pgbench's per-transaction log (-l) costs the load itself: at select-only rates on two cores it
is the whole gap between pgrig and raw pgbench (bench/overhead.py). So `auto` (the default)
chooses by the rate the run is expected to reach:

- below FULL_BELOW_TPS (10,000): full, every transaction logged (percentiles from every one);
- above: sampled, pgbench's own --sampling-rate chosen so the log stays near
  TARGET_LINES_PER_S (3,000 lines a second), never below MIN_SAMPLING_RATE.

The expected rate is, in this order: the --rate of a throttled run (it cannot go faster); the
TPS of the newest ok run of the same environment, database, workload, clients, threads and
protocol in the archive; else a probe, 1 s of the same pgbench without a log, run just before
(its TPS is recorded with the choice). The choice and its basis are kept with the run
(extra["txlog_mode"]). In sampled and off modes TPS and counts are pgbench's own summary
(load/engines/pgbench_sampled.py), never estimated from the sample.
"""

from __future__ import annotations

import math
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pgrig.load.engines import command as pgbench_command
from pgrig.load.engines import pgbench_output
from pgrig.load.engines.process import die_with_parent
from pgrig.record.documents import TxlogModeDoc
from pgrig.record.protocol import RunReader

if TYPE_CHECKING:
    from pgrig.request import RunRequest

FULL_BELOW_TPS = 10_000.0
TARGET_LINES_PER_S = 3_000.0
MIN_SAMPLING_RATE = 0.0001
PROBE_S = 1


@dataclass(frozen=True)
class TxlogChoice:
    mode: str  # full | sampled | off
    sampling_rate: float | None  # pgbench --sampling-rate (sampled only)
    expected_tps: float | None
    basis: str  # why: "requested", "--rate 5000", "run 12 (same ...)", "probe: 1 s ..."

    def as_dict(self) -> TxlogModeDoc:
        return {
            "mode": self.mode,
            "sampling_rate": self.sampling_rate,
            "expected_tps": self.expected_tps,
            "basis": self.basis,
        }


def sampling_rate_for(expected_tps: float) -> float:
    """A --sampling-rate keeping the log near TARGET_LINES_PER_S (two significant digits)."""
    raw = min(1.0, TARGET_LINES_PER_S / max(expected_tps, 1.0))
    digits = 1 - math.floor(math.log10(raw))
    return max(MIN_SAMPLING_RATE, round(raw, digits))


def choose(
    spec: RunRequest,
    previous_tps: Callable[[], tuple[int, float] | None],
    probe_tps: Callable[[], float | None],
) -> TxlogChoice:
    """The mode of a run. previous_tps: (run id, TPS) of the newest comparable ok run;
    probe_tps: TPS of a short probe (only asked when nothing else tells)."""
    if spec.txlog in ("full", "off"):
        return TxlogChoice(spec.txlog, None, None, "requested")
    expected: float | None = None
    basis = ""
    if spec.rate is not None:
        expected, basis = spec.rate, f"--rate {spec.rate:g}"
    elif (found := previous_tps()) is not None:
        run_id, tps = found
        expected = tps
        basis = f"run {run_id} (same environment, database, workload, clients, threads)"
    else:
        expected = probe_tps()
        basis = f"probe: {PROBE_S} s of the same pgbench without a log"
    if spec.txlog == "sampled":
        rate = sampling_rate_for(expected) if expected else 0.1
        return TxlogChoice("sampled", rate, expected, f"requested; rate from {basis}")
    if expected is None or expected < FULL_BELOW_TPS:
        return TxlogChoice("full", None, expected, basis or "no expected rate")
    return TxlogChoice("sampled", sampling_rate_for(expected), expected, basis)


def previous_run_tps(
    archive: RunReader | None, spec: RunRequest, env_name: str, dbname: str
) -> Any:
    """A previous_tps for `choose`: the newest comparable ok run in the archive."""
    from pgrig.archive.records import RunFilter

    def find() -> tuple[int, float] | None:
        if archive is None:
            return None
        try:
            runs = archive.list_runs(
                RunFilter(env_name=env_name, status="ok", workload=spec.workload), limit=50
            )
        except Exception:
            return None
        for r in runs:
            same = (r.clients, r.threads, r.protocol, r.database) == (
                spec.clients, spec.threads, spec.protocol, dbname,
            )  # fmt: skip
            if same and r.tps and r.id is not None:
                return r.id, float(r.tps)
        return None

    return find


def probe(
    pgbench: str, spec: RunRequest, client_env: dict[str, str], prefix: list[str]
) -> Callable[[], float | None]:
    """A probe_tps for `choose`: 1 s of the run's pgbench, no log, pgbench's own TPS."""

    def run() -> float | None:
        quick = spec.model_copy(
            update={"transactions_per_client": None, "duration_s": float(PROBE_S)}
        )
        argv = pgbench_command.build_pgbench_command(
            pgbench, quick, log_prefix="", total_seconds=PROBE_S, progress=False
        )
        try:
            done = subprocess.run(
                prefix + argv,
                env=client_env,
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
                preexec_fn=die_with_parent,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        return pgbench_output.parse_summary(done.stdout, done.stderr).tps

    return run
