"""The charts of runs: which columns of a run's series go on which chart, with titles and units.

The web run page and the run report draw these same charts; the compare page and the compare
report draw the same overlays. Series are columnar ({"t": [...], col: [...]}, t in seconds
from the start of the measured window, negative during the warm-up). Known columns are grouped
by meaning; any column this module does not know still gets a chart of its own, so nothing a
sampler records is hidden.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pgrig.reports.svg import Chart, Trace

LATENCY_RE = re.compile(r"^(lat(ency)?_)?(avg|mean|min|max|stddev|p\d+)(_ms)?$")
META_COLUMNS = ("t", "up")  # time, and whether the sampler reached its source
FAILURE_COLUMNS = ("failed", "failures", "retried", "skipped", "errors", "aborted")


@dataclass(frozen=True)
class Group:
    title: str
    unit: str
    match: Callable[[str], bool]
    y_label: str = ""


def _names(*names: str) -> Callable[[str], bool]:
    return lambda c: c in names


def _prefix(*prefixes: str) -> Callable[[str], bool]:
    return lambda c: c.startswith(prefixes)


OS_GROUPS = (
    Group(
        "CPU",
        "%",
        _names("cpu_user", "cpu_system", "cpu_iowait", "cpu_steal", "cpu_idle"),
        "% of all CPUs",
    ),
    Group("Memory", "B", _prefix("mem_", "swap_")),
    Group("Disk throughput", "B/s", _names("disk_read_bytes", "disk_write_bytes")),
    Group("Disk IOPS", "1/s", _names("disk_read_iops", "disk_write_iops"), "per second"),
    Group("Disk busy", "%", _names("disk_busy_pct")),
    Group("Context switches", "1/s", _names("ctx_switches"), "per second"),
    Group("Processes", "", _names("procs_running", "procs_blocked")),
    Group(
        "Processes per program",
        "",
        lambda c: c.startswith("proc_") and c.endswith("_count"),
        "processes",
    ),
    Group(
        "Per-process CPU",
        "%",
        lambda c: c.startswith("proc_") and c.endswith("_cpu"),
        "% of one core",
    ),
)
PG_GROUPS = (
    Group("Commits and rollbacks", "1/s", _names("commits", "rollbacks"), "per second"),
    Group("Buffer hits and reads", "1/s", _names("blks_hit", "blks_read"), "blocks per second"),
    Group("Cache hit ratio", "%", _names("hit_ratio")),
    Group("Tuples", "1/s", _prefix("tup_"), "per second"),
    Group("WAL", "B/s", _names("wal_bytes")),
    Group("Temp files", "B/s", _names("temp_bytes")),
    Group("Buffers written", "1/s", _names("buffers_written"), "buffers per second"),
    Group("Checkpoints", "", _prefix("checkpoints_"), "per sample"),
    Group("Autovacuum and autoanalyze", "", _names("autovacuum", "autoanalyze"), "per sample"),
    Group("Backends", "", _names("backends", "active_backends", "idle_in_xact")),
    Group("Wait events", "", _prefix("wait."), "active backends"),
    Group("Deadlocks", "", _names("deadlocks"), "per sample"),
)
SMALL_W, SMALL_H = 480, 230  # metric charts sit three to a row


def _axis_label(unit: str) -> str:
    """Byte units are on the tick labels already; others name the axis."""
    return "per second" if unit == "1/s" else "" if unit.startswith("B") else unit


POOLER_GROUPS = (
    Group("Clients", "", _names("cl_active", "cl_waiting"), "connections"),
    Group(
        "Server connections",
        "",
        _names("sv_active", "sv_idle", "sv_used", "sv_login"),
        "connections",
    ),
    Group("Transactions and queries", "1/s", _names("xact_per_s", "query_per_s"), "per second"),
    Group("Client wait", "ms", _names("maxwait_ms", "wait_ms_per_s"), "ms"),
    Group("Wait per transaction", "", _names("wait_us_per_xact", "avg_wait_time_us"), "µs"),
    Group("Transaction time", "", _names("avg_xact_time_us"), "µs"),
    Group("Network", "B/s", _names("recv_bytes_per_s", "sent_bytes_per_s")),
    Group("Processes answering", "", _names("processes_up"), "processes"),
)
REPLICATION_GROUPS = (
    Group("Replay lag", "B", lambda c: c.endswith("_lag_bytes") and "flush" not in c, "bytes"),
    Group("Flush lag", "B", lambda c: c.endswith("_flush_lag_bytes"), "bytes"),
    Group("Lag times (pg_stat_replication)", "ms", lambda c: c.endswith("_lag_ms"), "ms"),
    Group("Streaming", "", lambda c: c.endswith("_connected"), "1 = streaming"),
)
KIND_TITLES = {
    "os": "Operating system",
    "pg": "PostgreSQL",
    "pooler": "Connection pooler",
    "replication": "Replication",
}


def _values(cols: Mapping[str, Sequence[float | None]], name: str) -> Sequence[float | None]:
    return cols.get(name) or []


def _all_zero(values: Sequence[float | None]) -> bool:
    return all(v is None or v == 0 for v in values)


def warmup_shade(t: Sequence[float | None]) -> float | None:
    """Shade the warm-up (t < 0) when the series has any."""
    return 0.0 if any(x is not None and x < 0 for x in t) else None


def _pretty(col: str) -> str:
    return col.replace("_", " ")


TIME_LABEL = "time (0 = start of the measured window)"


def time_chart(
    title: str,
    traces: list[Trace],
    t: Sequence[float | None],
    y_label: str = "",
    y_unit: str = "",
    small: bool = False,
) -> Chart:
    """A chart over a run's time axis, the warm-up shaded."""
    chart = Chart(
        title,
        traces,
        x_label=TIME_LABEL,
        x_unit="s",
        y_label=y_label,
        y_unit=y_unit,
        shade_until=warmup_shade(t),
    )
    if small:
        chart.width, chart.height = SMALL_W, SMALL_H
    return chart


def throughput_chart(pgbench: dict[str, list], title: str = "Throughput") -> Chart:
    t = _values(pgbench, "t")
    return time_chart(title, [Trace("TPS", t, _values(pgbench, "tps"))], t, "transactions/s", "1/s")


def latency_columns(cols: dict[str, list]) -> list[str]:
    """Latency columns in a sensible order: avg, p50 … p999, max."""

    def rank(c: str) -> tuple[int, float]:
        m = LATENCY_RE.match(c)
        stat = m.group(3) if m else c
        if stat.startswith("p"):
            digits = stat[1:]
            return 1, float("0." + digits) if len(digits) > 2 else float(digits) / 100
        return {"min": (0, 0), "avg": (0, 1), "mean": (0, 1), "stddev": (0, 2)}.get(stat, (2, 0))

    return sorted((c for c in cols if LATENCY_RE.match(c) and c != "stddev"), key=rank)


def latency_chart(pgbench: dict[str, list]) -> Chart | None:
    """Percentiles over time; max is left to the table (one stall would flatten the rest)."""
    cols = [c for c in latency_columns(pgbench) if not _all_zero(_values(pgbench, c))]
    if len(cols) > 1:
        cols = [c for c in cols if _latency_label(c) != "max"]
    if not cols:
        return None
    t = _values(pgbench, "t")
    lines = [Trace(_latency_label(c), t, _values(pgbench, c)) for c in cols]
    return time_chart("Latency percentiles", lines, t, "ms", "ms")


def _latency_label(col: str) -> str:
    m = LATENCY_RE.match(col)
    stat = m.group(3) if m else col
    if stat.startswith("p") and len(stat) > 3:  # p999 → p99.9
        stat = f"p{stat[1:3]}.{stat[3:]}"
    return stat


def failures_chart(pgbench: dict[str, list]) -> Chart | None:
    cols = [c for c in FAILURE_COLUMNS if c in pgbench and not _all_zero(pgbench[c])]
    if not cols:
        return None
    t = _values(pgbench, "t")
    return time_chart("Failures", [Trace(c, t, pgbench[c]) for c in cols], t, "per second", "1/s")


def load_charts(pgbench: dict[str, list]) -> list[Chart]:
    """What pgbench saw over time: throughput, latency percentiles, failures (when any)."""
    if not pgbench.get("t"):
        return []
    charts = [throughput_chart(pgbench), latency_chart(pgbench), failures_chart(pgbench)]
    return [c for c in charts if c is not None]


@dataclass
class ChartSet:
    title: str
    charts: list[Chart]
    quiet: list[str]  # columns left out because they stayed at zero
    notes: list[str] = field(default_factory=list)  # e.g. samples where the source was down
    kind: str = ""  # the sampler: "os", "pg", "pooler", ...


def metric_charts(kind: str, cols: dict[str, list]) -> ChartSet:
    """Charts for one sampler kind ("os", "pg", "pooler"): known groups, then the rest."""
    base, _at, host = kind.partition("@")  # "os@h2": host h2's own OS sampler
    groups = {
        "os": OS_GROUPS,
        "pg": PG_GROUPS,
        "pooler": POOLER_GROUPS,
        "replication": REPLICATION_GROUPS,
    }.get(base, ())
    t = _values(cols, "t")
    names = [c for c in cols if c not in META_COLUMNS]
    quiet = sorted(c for c in names if _all_zero(cols[c]))
    used: set[str] = set(quiet)
    charts: list[Chart] = []
    for g in groups:
        members = [c for c in names if c not in used and g.match(c)]
        if not members:
            continue
        used.update(members)
        lines = [Trace(_member_label(c, g), t, cols[c]) for c in members]
        y_label = g.y_label or _axis_label(g.unit)
        charts.append(time_chart(g.title, lines, t, y_label, g.unit, small=True))
    for c in names:
        if c not in used:
            charts.append(time_chart(_pretty(c), [Trace(c, t, cols[c])], t, small=True))
    title = KIND_TITLES.get(kind) or (
        f"{KIND_TITLES.get(base, base)}, host {host}" if host else kind
    )
    down = sum(1 for v in cols.get("up") or [] if v == 0)
    notes = [f"{title}: no data in {down} of {len(t)} samples (source unreachable)"] if down else []
    return ChartSet(title, charts, quiet, notes, kind)


def metric_chart_sets(series: dict[str, dict[str, list]]) -> list[ChartSet]:
    """The metric charts of a run: OS, PostgreSQL, pooler, then any other sampler's."""
    extra = sorted(set(series) - {"pgbench", "os", "pg", "pooler"})
    return [metric_charts(k, series[k]) for k in ("os", "pg", "pooler", *extra) if series.get(k)]


def _member_label(col: str, g: Group) -> str:
    if col.startswith("proc_") and col.endswith(("_cpu", "_count")):
        return col[5:].rsplit("_", 1)[0]
    if col.startswith("wait."):
        return col[5:]
    for prefix in ("cpu_", "disk_", "mem_", "tup_", "checkpoints_", "procs_"):
        if col.startswith(prefix) and g.title not in ("Memory",):
            return _pretty(col[len(prefix) :]).replace(" iops", "").replace(" bytes", "")
    for suffix in ("_bytes_per_s", "_per_s", "_bytes", "_ms", "_us"):
        col = col.removesuffix(suffix)
    return _pretty(col)


# --- several runs on one chart ---------------------------------------------------------------
OVERLAYS: tuple[tuple[str, str, tuple[str, ...], str], ...] = (
    ("TPS", "pgbench", ("tps",), "1/s"),
    ("CPU user + system", "os", ("cpu_user", "cpu_system"), "%"),
    ("Disk writes", "os", ("disk_write_bytes",), "B/s"),
    ("WAL", "pg", ("wal_bytes",), "B/s"),
    ("Commits", "pg", ("commits",), "1/s"),
)


def overlay_charts(runs: Sequence[tuple[str, dict[str, dict[str, list]]]]) -> list[Chart]:
    """One chart per figure with one line per run (label, series); a run keeps its colour on
    every chart. Latency uses the highest percentile all runs recorded."""
    specs = list(OVERLAYS)
    lat = _common_latency_column([series for _, series in runs])
    if lat:
        specs.insert(1, (f"Latency {_latency_label(lat)}", "pgbench", (lat,), "ms"))
    out: list[Chart] = []
    for title, kind, cols, unit in specs:
        traces, times = [], []
        for label, series in runs:
            data = series.get(kind) or {}
            t = data.get("t") or []
            drawn = all(c in data for c in cols)
            traces.append(Trace(label, t, _sum_columns([data[c] for c in cols]) if drawn else []))
            if drawn:
                times += t
        if any(tr.y for tr in traces):
            out.append(time_chart(title, traces, times, _axis_label(unit), unit))
    return out


def _sum_columns(columns: list[list[float | None]]) -> list[float | None]:
    if len(columns) == 1:
        return columns[0]
    return [None if any(v is None for v in vs) else sum(vs) for vs in zip(*columns, strict=False)]


def _common_latency_column(runs: list[dict[str, dict[str, list]]]) -> str | None:
    present = [set(latency_columns(s["pgbench"])) for s in runs if s.get("pgbench")]
    common = set.intersection(*present) if present else set()
    for pick in ("p95", "p99", "p90", "p50", "lat_avg", "avg", "latency_avg"):
        if pick in common:
            return pick
    return None
