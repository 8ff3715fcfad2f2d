"""TPC-C (spec rev 5.11) for PostgreSQL: data, transactions, pgbench scripts, metrics, checks.

Public API (what the CLI, the runner and studies call):
- generate(conninfo, warehouses, jobs=2, partition=False, progress=None) -> dict
- pgbench_scripts(out_dir, *, warehouses, mix, all_warehouses, conninfo, protocol)
      -> (list[ScriptSpec], defines for -D, recommended --max-tries)
- summarize(script_results, measured_s) -> dict (nopm, tpm, rollbacks, per type ...)
- fidelity(conninfo) -> dict (realised remote/by-name shares measured from the data)
- check(conninfo) -> list[CheckResult]; format_check(results) -> str; all_passed(results)
"""

from pgrig.workloads.tpcc.consistency import CheckResult, all_passed, check, format_check
from pgrig.workloads.tpcc.loader import generate
from pgrig.workloads.tpcc.metrics import fidelity, summarize
from pgrig.workloads.tpcc.scripts import DEFAULT_MIX, TYPES, pgbench_scripts, validate_mix

__all__ = [
    "DEFAULT_MIX",
    "TYPES",
    "CheckResult",
    "all_passed",
    "check",
    "fidelity",
    "format_check",
    "generate",
    "pgbench_scripts",
    "summarize",
    "validate_mix",
]
