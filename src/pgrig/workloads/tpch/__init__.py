"""TPC-H (spec rev 3.x) for PostgreSQL: data, queries, refresh functions, runs, answers.

Public API (what the CLI, the runner and studies call):
- generate(conninfo, scale_factor, jobs=2, progress=None) -> dict: the data (loader.py)
- check_scale_factor(sf): refuses what dbgen cannot make or this machine cannot load
"""

from pgrig.workloads.tpch.loader import BYTES_PER_SF, check_scale_factor
from pgrig.workloads.tpch.loader import load as generate

__all__ = ["BYTES_PER_SF", "check_scale_factor", "generate"]
