"""Turn `--workload` arguments into pgbench scripts.

Accepted forms (repeatable, or comma-separated):
  pgbench:tpcb | pgbench:tpcb-like | pgbench:simple-update | pgbench:select-only   builtins
  path/script.sql[@weight]                                                         a script file
  tpcc                                                                             TPC-C mix
  chbench                                  TPC-C mix and CH analytic streams (--analytic-clients)
  tickets:read | tickets:write                                                     seed 003
  sysbench:oltp_read_write | sysbench:PATH.lua          sysbench (workloads/sysbench.py)
  tpch | tpch:power | tpch:throughput                   TPC-H (workloads/tpch)
Builtins take a weight too: pgbench:select-only@9.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pgrig.errors import PgrigError
from pgrig.request import ScriptSpec
from pgrig.request.values import ascii_digits
from pgrig.request.vocabulary import (
    CHBENCH_WORKLOAD,
    PGBENCH_BUILTINS,
    TPCC_WORKLOAD,
    TPCH_PREFIX,
    TPCH_WORKLOADS,
    PgbenchBuiltin,
)

# pgbench:NAME for each builtin, plus the short pgbench:tpcb
BUILTINS: dict[str, PgbenchBuiltin] = {"tpcb": "tpcb-like", **{n: n for n in PGBENCH_BUILTINS}}
# Workloads whose scripts come from a scenario module rather than from the command line.
SCENARIO_WORKLOADS = {TPCC_WORKLOAD, CHBENCH_WORKLOAD}
# The one variable a builtin script takes from outside (-D scale=N); it \sets the others.
BUILTIN_VARIABLES = frozenset({"scale"})
# :name, :'name', :"name" and :{?name} in a pgbench script (a "::int" cast reads as "int",
# which can only make a variable look used, never unused).
_VARIABLE_RE = re.compile(r""":[{'"]?\??([A-Za-z_][A-Za-z0-9_]*)""")


def split_weight(item: str) -> tuple[str, int]:
    if "@" not in item:
        return item, 1
    name, _, weight = item.rpartition("@")
    if not ascii_digits(weight.strip().removeprefix("-")):
        raise PgrigError(f"bad weight in workload {item!r}: {weight!r} is not an integer")
    w = int(weight)
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
        if item.startswith("sysbench:"):
            from pgrig.workloads import sysbench

            if len(flat) > 1:
                raise PgrigError(f"workload {item!r} cannot be mixed with other scripts")
            label, path = sysbench.script_path(item)
            return [ScriptSpec(name=label, path=str(path), weight=1)]
        if item in TPCH_WORKLOADS or item.startswith(TPCH_PREFIX):  # workloads/tpch's queries
            if len(flat) > 1:
                raise PgrigError(f"workload {item!r} cannot be mixed with other scripts")
            if item not in TPCH_WORKLOADS:
                raise PgrigError(
                    f"unknown TPC-H workload {item!r} (choose from {', '.join(TPCH_WORKLOADS)})"
                )
            return []
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
                raise PgrigError(f"script file not found: {name}{_meant(name)}")
            scripts.append(ScriptSpec(name=path.name, path=str(path.resolve()), weight=weight))
    if sum(s.weight for s in scripts) == 0:
        raise PgrigError("all workload weights are 0")
    return scripts


def _meant(name: str) -> str:
    """A missing file named as a built-in workload without its prefix (`-w tpcb-like`): the
    workload it names."""
    from pgrig.workloads import sysbench

    builtin = next((k for k, v in BUILTINS.items() if name in (k, v)), None)
    if builtin is not None:
        return f" (the pgbench built-in is pgbench:{builtin})"
    if name.removesuffix(".lua") in sysbench.OLTP_TESTS:
        return f" (the sysbench test is {sysbench.PREFIX}{name.removesuffix('.lua')})"
    return ""


def workload_label(items: list[str]) -> str:
    return ",".join(part.strip() for item in items for part in item.split(",") if part.strip())


def scenario_of(scripts: list[ScriptSpec], items: list[str]) -> str:
    label = workload_label(items)
    if label in SCENARIO_WORKLOADS:
        return label
    if label.startswith("sysbench:"):
        return "sysbench"
    if label in TPCH_WORKLOADS or label.startswith(TPCH_PREFIX):
        return "tpch"
    if scripts and all(s.builtin for s in scripts):
        return "pgbench"
    if scripts and all(s.name.startswith("tickets:") for s in scripts):
        return "tickets"
    return "custom"


def unused_defines(scripts: list[ScriptSpec], names: Iterable[str]) -> list[str]:
    """Variables given with -D that no script reads: pgbench would ignore them silently."""
    used: set[str] = set()
    for s in scripts:
        if s.builtin is not None:
            used |= BUILTIN_VARIABLES
        elif s.path is not None and s.path.endswith(".lua"):
            return []  # sysbench: --define NAME=VALUE are the Lua script's --NAME options
        elif s.path is not None:
            used |= set(_VARIABLE_RE.findall(Path(s.path).read_text(errors="replace")))
    return [name for name in names if name not in used]
