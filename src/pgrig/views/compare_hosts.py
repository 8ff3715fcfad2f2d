"""The hosts of compared runs, computed once for `pgrig runs compare` (text and --json), the web
compare page and `pgrig report compare`: per host and role, its CPU busy, iowait and steal over
each column's measured window, and whether a load host was saturated.

Each host's figures come from its own sampler (series "os@HOST", views/run_hosts.py reads them
the same way for `runs show`); this machine's from its own sampler (series "os") for the roles no
other host had in the run (the database of a local environment, pgbench without --load-from).
"Saturated" is the run's own verdict (extra.load.saturated, the `load_host_saturated`
warning), not recomputed here. A column of repeats shows the centre of its ok runs' figures
(analysis.compare.group_value, as every other figure of the comparison).

The table is shown only when a compared run has per-host figures: two runs on this machine
alone already show their CPU in the figures above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pgrig import format as fmt
from pgrig.analysis.compare import group_value
from pgrig.archive.records import RunRecord
from pgrig.record.json_values import JsonObject, JsonValue
from pgrig.table import Cell, Table
from pgrig.views import run_environment
from pgrig.views.run_hosts import SATURATED, roles, window_mean

THIS_MACHINE = "this machine"
FIGURES = (("busy", "CPU busy %"), ("iowait", "CPU iowait %"), ("steal", "CPU steal %"))
NOTE = (
    "Each host's own sampler, mean over the measured window: busy = 100 - idle - iowait (steal "
    "included), all the host's CPUs; this machine: the roles no other host had. Saturated: a "
    f"load host above {SATURATED:.0f}% busy, as the run judged it. Repeats: the centre of the "
    "ok runs."
)


@dataclass(frozen=True)
class HostRole:
    host: str
    role: str  # "db", "load", "db, load", ...


@dataclass
class HostFigures:
    """One host in one role: per column, each figure (None: that column had no such host)."""

    key: HostRole
    values: dict[str, list[float | None]]  # figure -> per column
    saturated: list[str | None] | None  # load hosts: per column "yes", "no", "2/3 runs"

    def as_dict(self, names: Sequence[str]) -> JsonObject:
        out: JsonObject = {"host": self.key.host, "role": self.key.role}
        for fig, vals in self.values.items():
            out[f"cpu_{fig}_pct"] = dict(zip(names, vals, strict=True))
        if self.saturated is not None:
            out["saturated"] = dict(zip(names, self.saturated, strict=True))
        return out


def cpu_figures(rec: RunRecord, kind: str) -> dict[str, float | None]:
    """busy, iowait and steal (%) of series `kind` ("os" or "os@HOST") over the window."""
    cols = rec.series.get(kind)
    if not cols:
        return {}
    end = float(rec.measured_s or 0.0)
    idle, wait = list(cols.get("cpu_idle") or []), list(cols.get("cpu_iowait") or [])
    wait += [None] * (len(idle) - len(wait))
    busy = [
        None if i is None else 100.0 - float(i) - float(w or 0.0)
        for i, w in zip(idle, wait, strict=False)
    ]
    return {
        "busy": window_mean(cols, busy, end),
        "iowait": window_mean(cols, wait, end),
        "steal": window_mean(cols, list(cols.get("cpu_steal") or []), end),
    }


def has_hosts(rec: RunRecord) -> bool:
    return bool(rec.extra.get("host_roles")) or any(k.startswith("os@") for k in rec.series)


def local_roles(rec: RunRecord) -> list[str]:
    """What this machine did in the run: the roles no other host of the run had."""
    taken = {r for rs in roles(rec).values() for r in rs}
    here = run_environment.of(rec).here  # the server ran on this machine
    mine = []
    if here and "db" not in taken:
        mine.append("db")
    if rec.via != "direct" and here and "pooler" not in taken:
        mine.append("pooler")
    if not (rec.extra.get("load") or {}).get("split") and "load" not in taken:
        mine.append("load")
    return mine


# every host of one run: its figures and, for a load host, whether it was saturated
RunHosts = dict[HostRole, tuple[dict[str, float | None], bool | None]]


def run_hosts(rec: RunRecord) -> RunHosts:
    """Every host of one run: its figures and, for a load host, whether it was saturated."""
    saturated = (rec.extra.get("load") or {}).get("saturated") or {}
    out: RunHosts = {}
    for host, rs in roles(rec).items():
        figs = cpu_figures(rec, f"os@{host}")
        out[HostRole(host, ", ".join(rs) or fmt.MISSING)] = (
            figs,
            (host in saturated) if "load" in rs else None,
        )
    mine = local_roles(rec)
    if mine and "os" in rec.series:
        out[HostRole(THIS_MACHINE, ", ".join(mine))] = (cpu_figures(rec, "os"), None)
    return out


def build(groups: Sequence[Sequence[RunRecord]]) -> list[HostFigures]:
    """The hosts of every column (the union, in first-seen order), per figure per column."""
    if not any(has_hosts(r) for g in groups for r in g):
        return []
    per_run = [[run_hosts(r) for r in g] for g in groups]
    keys: list[HostRole] = []
    for col in per_run:
        for hosts in col:
            keys += [k for k in hosts if k not in keys]
    rows = []
    for key in keys:
        values = {
            fig: [_group(g, col, key, fig) for g, col in zip(groups, per_run, strict=True)]
            for fig, _label in FIGURES
        }
        flags: list[str | None] | None = [
            _saturation(g, col, key) for g, col in zip(groups, per_run, strict=True)
        ]
        rows.append(HostFigures(key, values, flags if any(flags or ()) else None))
    return rows


def _group(
    runs: Sequence[RunRecord],
    col: list[RunHosts],
    key: HostRole,
    figure: str,
) -> float | None:
    """A column's figure: its run's, or the centre of its ok repeats'."""
    by_run: dict[int, dict[str, float | None]] = {
        id(r): hosts[key][0] if key in hosts else {} for r, hosts in zip(runs, col, strict=True)
    }
    value = group_value(runs, lambda r: by_run[id(r)].get(figure))
    return float(value) if value is not None else None


def _saturation(runs: Sequence[RunRecord], col: list[RunHosts], key: HostRole) -> str | None:
    flags = [hosts[key][1] for hosts in col if key in hosts and hosts[key][1] is not None]
    if not flags:
        return None
    if len(runs) == 1:
        return "yes" if flags[0] else "no"
    return f"{sum(bool(f) for f in flags)}/{len(flags)} runs"


def table(rows: list[HostFigures], names: Sequence[str]) -> Table | None:
    """The rows as one table: host, role, figure, then one column per compared column."""
    if not rows:
        return None
    out: list[list[Cell]] = []
    for row in rows:
        head = [Cell([row.key.host]), Cell([row.key.role])]
        for fig, label in FIGURES:
            cells = [Cell.of(fmt.number(v, 1) if v is not None else None)
                     for v in row.values[fig]]  # fmt: skip
            out.append([*head, Cell([label]), *cells])
        if row.saturated is not None:
            flags = [
                Cell.of(s, "warn" if s and s != "no" and not s.startswith("0/") else None)
                for s in row.saturated
            ]
            out.append([*head, Cell([f"saturated (> {SATURATED:.0f}% busy)"]), *flags])
    numeric = frozenset(range(3, 3 + len(names)))
    return Table(["host", "role", "figure", *names], out, "Hosts", numeric, NOTE)


def to_json(rows: list[HostFigures], names: Sequence[str]) -> list[JsonValue]:
    return [r.as_dict(names) for r in rows]
