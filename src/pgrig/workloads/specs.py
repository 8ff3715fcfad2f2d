"""Turn `--workload` arguments into pgbench scripts.

Accepted forms (repeatable, or comma-separated):
  pgbench:tpcb | pgbench:tpcb-like | pgbench:simple-update | pgbench:select-only   builtins
  path/script.sql[@weight]                                                         a script file
  tpcc                                                                             TPC-C mix
  tickets:read | tickets:write                                                     seed 003
Builtins take a weight too: pgbench:select-only@9.
"""

from __future__ import annotations

from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.workloads.script import PGBENCH_BUILTINS, ScriptSpec

# pgbench:NAME for each builtin, plus the short pgbench:tpcb
BUILTINS = {"tpcb": "tpcb-like", **{name: name for name in PGBENCH_BUILTINS}}
# Workloads whose scripts come from a scenario module rather than from the command line.
SCENARIO_WORKLOADS = {"tpcc"}


def split_weight(item: str) -> tuple[str, int]:
    if "@" not in item:
        return item, 1
    name, _, weight = item.rpartition("@")
    try:
        w = int(weight)
    except ValueError:
        raise PgrigError(f"bad weight in workload {item!r}: {weight!r} is not an integer") from None
    if w < 0:
        raise PgrigError(f"bad weight in workload {item!r}: must be >= 0")
    return name, w


def parse_workloads(items: list[str]) -> list[ScriptSpec]:
    """Parse `--workload` values into script specs; file scripts must exist."""
    flat = [part.strip() for item in items for part in item.split(",") if part.strip()]
    if not flat:
        raise PgrigError("no workload given (e.g. --workload pgbench:tpcb)")
    scripts: list[ScriptSpec] = []
    for item in flat:
        name, weight = split_weight(item)
        if name.startswith("pgbench:"):
            key = name.split(":", 1)[1]
            if key not in BUILTINS:
                raise PgrigError(
                    f"unknown pgbench builtin {key!r} (choose from {', '.join(sorted(BUILTINS))})"
                )
            scripts.append(ScriptSpec(name=f"pgbench:{key}", builtin=BUILTINS[key], weight=weight))
        elif name.startswith("tickets:"):
            from pgrig.workloads import tickets

            scripts.append(tickets.script(name.split(":", 1)[1], weight))
        elif name in SCENARIO_WORKLOADS:
            if len(flat) > 1:
                raise PgrigError(f"workload {name!r} cannot be mixed with other scripts")
            return []
        else:
            path = Path(name).expanduser()
            if not path.is_file():
                raise PgrigError(f"script file not found: {name}")
            scripts.append(ScriptSpec(name=path.name, path=str(path.resolve()), weight=weight))
    if sum(s.weight for s in scripts) == 0:
        raise PgrigError("all workload weights are 0")
    return scripts


def workload_label(items: list[str]) -> str:
    return ",".join(part.strip() for item in items for part in item.split(",") if part.strip())


def scenario_of(scripts: list[ScriptSpec], items: list[str]) -> str:
    label = workload_label(items)
    if label in SCENARIO_WORKLOADS:
        return label
    if scripts and all(s.builtin for s in scripts):
        return "pgbench"
    if scripts and all(s.name.startswith("tickets:") for s in scripts):
        return "tickets"
    return "custom"
