"""A pgbench script as workloads describe it (the load package only executes them)."""

from __future__ import annotations

from dataclasses import dataclass

PGBENCH_BUILTINS = ("tpcb-like", "simple-update", "select-only")


@dataclass
class ScriptSpec:
    """One pgbench script: a builtin (`-b tpcb-like`) or a file (`-f path`), with a weight."""

    name: str  # display name: "pgbench:tpcb", "tpcc:new_order", "read.sql"
    builtin: str | None = None  # tpcb-like | simple-update | select-only
    path: str | None = None
    weight: int = 1
