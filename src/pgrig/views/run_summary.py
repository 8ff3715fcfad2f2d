"""One run's summary, computed once: `pgrig runs show`, the run page and `pgrig report run`
render it. What ran, where and how (about), what it measured (results), its per-script
figures, the settings that differ from PostgreSQL's defaults and the host checks.

To show a new fact of a run everywhere (a per-host sampler, a network fact, a backup figure),
add an Item here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pgrig import format as fmt
from pgrig.archive.records import RunRecord
from pgrig.insights import log_excerpt
from pgrig.record.documents import HostDoc
from pgrig.record.figures import headline, headline_text, tpch_figures
from pgrig.table import Cell, CellValue, Table
from pgrig.views import (
    backup_figures,
    chbench,
    disk_limit,
    harness_cost,
    latency,
    run_environment,
    run_hosts,
)
from pgrig.views.settings import SettingRow, non_default_rows

LATENCY_FIELDS = ("avg", "p50", "p95", "p99", "max")


@dataclass
class RunSummary:
    title: str
    status: str
    error: str | None
    warnings: list[str]
    about: list[tuple[str, str]]
    results: list[tuple[str, str]]
    scripts: Table | None
    settings: list[SettingRow]
    settings_note: str  # what an empty settings list means
    host_checks: Table | None
    command: str | None = None
    host: list[tuple[str, str]] = field(default_factory=list)
    hosts: Table | None = None  # every host of the run (views/run_hosts.py)
    backup: list[tuple[str, str]] = field(default_factory=list)  # backup and restore runs
    topology: list[tuple[str, str]] = field(default_factory=list)  # replicas and their lag
    latency_basis: list[tuple[str, str]] = field(default_factory=list)  # also in results
    headline: tuple[str, str] = ("TPS", fmt.MISSING)  # record/figures.headline: label, value
    analytic: Table | None = None  # CH-benCHmark's queries (views/chbench.py)

    @property
    def items(self) -> list[tuple[str, str]]:
        return self.about + self.results + self.backup + self.topology

    def settings_table(self) -> Table:
        rows = [[s.name, s.value, s.default, s.source, s.layer] for s in self.settings]
        return Table.build(
            ["setting", "value", "default", "source", "layer"],
            rows,
            caption="Settings that differ from PostgreSQL's defaults",
            note=None if rows else self.settings_note,
        )


def build(rec: RunRecord) -> RunSummary:
    nd = non_default_rows(rec)
    hosts = run_hosts.of(rec)
    return RunSummary(
        title=f"run {rec.id}",
        status=rec.status,
        error=rec.error,
        warnings=[str(w.get("message")) for w in rec.warnings()],
        about=about(rec) + hosts.items(),
        results=results(rec),
        scripts=scripts_table(rec),
        settings=nd,
        settings_note=(
            "all settings at PostgreSQL's defaults"
            if rec.settings
            else "no settings snapshot was recorded"
        ),
        host_checks=host_checks_table(rec),
        command=rec.command,
        host=host_facts(rec.host),
        hosts=hosts.table(),
        backup=backup_figures.rows(rec),
        topology=backup_figures.topology_rows(rec),
        latency_basis=latency.items(rec),
        headline=headline_of(rec),
        analytic=chbench.table(rec),
    )


def headline_of(rec: RunRecord) -> tuple[str, str]:
    """The run's headline figure and its label: NOPM for TPC-C runs, a TPC-H run's figure
    (its value with its unit: "2,043 QppH@Size"), TPS for the rest."""
    figure = headline(rec)
    text, unit = headline_text(rec, figure)
    if unit != figure.label and text != fmt.MISSING:
        text += f" {unit}"
    return figure.label, text


def _sysbench_data(rec: RunRecord) -> str:
    """What a sysbench dataset is: the script that prepared it with its options, or the
    bundled oltp tables' count and size."""
    dataset = rec.extra.get("dataset") or {}
    if rec.scenario != "sysbench" or dataset.get("scenario") != "sysbench":
        return ""
    if dataset.get("script"):
        defines = " ".join(f"{k}={v}" for k, v in (dataset.get("defines") or {}).items())
        name = str(dataset["script"]).rsplit("/", 1)[-1]
        return f" (prepared by {name}" + (f" with {defines})" if defines else ")")
    tables, size = dataset.get("tables"), dataset.get("table_size")
    if tables is None or size is None:
        return ""
    return f", {fmt.number(tables)} tables of {fmt.number(size)} rows"


def about(rec: RunRecord) -> list[tuple[str, str]]:
    """What ran, where and how."""
    started = fmt.timestamp(rec.started_at, seconds=True)
    if rec.started_at and rec.ended_at:
        started += f" (wall time {fmt.duration((rec.ended_at - rec.started_at).total_seconds())})"
    data = rec.scenario or fmt.MISSING
    if (scale := rec.data_scale()) is not None:
        data += f", {scale[0]} {fmt.number(scale[1])}"
    data += _sysbench_data(rec)
    if rec.db_size_bytes:
        data += f", {fmt.size(rec.db_size_bytes)}"
    data += f", database {rec.database or fmt.MISSING}"
    load = f"{rec.clients} clients, {rec.threads} threads"
    if (streams := chbench.analytic_clients(rec)) is not None:
        load += f", {streams} analytic stream{'' if streams == 1 else 's'}"
    if rec.duration_s is not None:
        load += f", {fmt.duration(rec.duration_s)}"
    elif rec.transactions_per_client is not None:
        load += f", {fmt.number(rec.transactions_per_client)} transactions per client"
    load += f", warm-up {fmt.duration(rec.warmup_s)}" if rec.warmup_s else ", no warm-up"
    if rec.rate is not None:
        load += f", rate {fmt.number(rec.rate)} tps"
    if rec.latency_limit_ms is not None:
        load += f", latency limit {fmt.number(rec.latency_limit_ms)} ms"
    items = [
        ("started", started),
        ("environment", run_environment.of(rec).text(rec.via)),
        ("server", fmt.engine(rec.engine, rec.server_version)),
        _load_engine(rec),
        ("data", data),
        ("workload", f"{rec.workload} (protocol {rec.protocol})"),
        ("load", load),
    ]
    if rec.study:
        items.append(("study", f"{rec.study} point {rec.study_point or '-'} repeat {rec.repeat}"))
    if rec.tags:
        items.append(("tags", ", ".join(f"{k}={v}" for k, v in rec.tags.items())))
    items += [(k, v) for k, v in (("note", rec.note), ("owner", rec.owner)) if v]
    items += disk_limit.items(rec)
    server_log = rec.extra.get("server_log") if isinstance(rec.extra, dict) else None
    if isinstance(server_log, dict):  # what the server wrote during the run, what is kept
        items.append(("server log", log_excerpt.describe(server_log)))
    cost = harness_cost.of(rec)  # what pgrig itself took from the run
    items.append(("harness", cost.text))
    if cost.recorded:
        items.append(("harness detail", cost.detail))
    return items


def results(rec: RunRecord) -> list[tuple[str, str]]:
    """What the run measured."""
    items = [("measured", fmt.duration(rec.measured_s))]
    if rec.tps is not None or tpch_figures(rec) is None:  # a TPC-H run says its own figures
        items.append(("TPS", fmt.number(rec.tps)))
    if rec.nopm is not None:
        items.append(("NOPM", fmt.number(rec.nopm)))
    items += _tpch_items(rec)
    items += chbench.items(rec)
    if rec.tpm is not None:
        items.append(("TPM", fmt.number(rec.tpm)))
    items += [
        ("transactions", fmt.number(rec.transactions)),
        (
            "failed / retried / skipped",
            " / ".join(fmt.number(v) for v in (rec.failed, rec.retried, rec.skipped)),
        ),
    ]
    if rec.rollbacks is not None:
        items.append(("rollbacks", fmt.number(rec.rollbacks)))
    items.append(("latency ms", latency_text(rec)))
    items += latency.items(rec)  # how many samples the percentiles rest on, their bounds
    cpu = (rec.cpu_user, rec.cpu_system, rec.cpu_iowait, rec.cpu_idle)
    items.append(("CPU user / system / iowait / idle %", " / ".join(fmt.number(v) for v in cpu)))
    steal = rec.extra.get("cpu_steal") if isinstance(rec.extra, dict) else None
    if isinstance(steal, int | float):  # the hypervisor's share, where the kernel exposes it
        items.append(("CPU steal %", fmt.number(steal)))
    items.append(("cache hit ratio", fmt.percent(rec.hit_ratio, 2)))
    return items


def _tpch_items(rec: RunRecord) -> list[tuple[str, str]]:
    """A TPC-H run's own figures (load/engines/tpch_driver.py): QphH's parts where the run
    gives them, the geometric mean of the query times, what timed out."""
    doc = rec.extra.get("tpch") if isinstance(rec.extra, dict) else None
    if not isinstance(doc, dict):
        return []
    sf = doc.get("scale_factor")
    items = [
        (f"{name}@Size (SF {sf:g})" if isinstance(sf, int | float) else f"{name}@Size",
         fmt.number(doc.get(key)))
        for name, key in (
            ("Power", "power_at_size"), ("Throughput", "throughput_at_size"),
            ("QphH", "qphh_at_size"),
        )
        if doc.get(key) is not None or doc.get("mode") in ("performance", key[: -len("_at_size")])
    ]  # fmt: skip
    geo = doc.get("geomean_s")
    label = "query geometric mean"
    queries = [q for q in doc.get("queries") or [] if isinstance(q, dict)]
    if doc.get("mode") == "performance":  # its geometric mean is the power test's
        label += " (power test)"
        queries = [q for q in queries if q.get("test") == "power"]
    ok = sum(1 for q in queries if q.get("status") == "ok")
    if ok < len(queries):  # of the completed ones only: it reads low beside a full run's
        label += f" ({ok} of {len(queries)} queries)"
    items.append((label, f"{fmt.ms(geo * 1000)} ms" if geo else fmt.MISSING))
    refresh = [r for r in doc.get("refresh") or [] if isinstance(r, dict)]
    if refresh:
        items.append((
            "refresh functions",
            ", ".join(
                f"{r.get('function')} {fmt.ms(float(r.get('seconds') or 0) * 1000)} ms"
                + ("" if r.get("status") == "ok" else f" ({r.get('status')})")
                for r in refresh
            ),
        ))  # fmt: skip
    if doc.get("timed_out"):
        items.append(("timed out", ", ".join(doc["timed_out"])))
    if (temp := doc.get("temp_bytes")) is not None:
        items.append(("temp written", fmt.size(int(temp))))
    items.append(("seed", str(doc.get("seed"))))
    return items


def latency_text(rec: RunRecord) -> str:
    """Every latency figure the run recorded, as `runs show` and `run` print it ("avg 0.10,
    stddev 0.13, p50 0.087, ..."; a --txlog off run has avg and stddev only)."""
    lat = [(k, v) for k, v in rec.latency.as_dict().items() if v is not None]
    return ", ".join(f"{k} {fmt.ms(v)}" for k, v in lat) or fmt.MISSING


# Counts a script may have beside its failures, shown where any script has one (retries with
# --max-tries, skipped with --latency-limit, rollbacks from sysbench and TPC-C).
SCRIPT_COUNTS = ("retried", "skipped", "rollbacks")


def scripts_table(rec: RunRecord) -> Table | None:
    """Per transaction type: the same table in `runs show`, the run page and `report run`."""
    if not rec.scripts:
        return None
    counts = [k for k in SCRIPT_COUNTS if any(getattr(s, k) for s in rec.scripts)]
    rows = [
        [
            str(s.script_no),
            s.name,
            str(s.weight),
            fmt.number(s.transactions),
            fmt.number(s.failed),
            *(fmt.number(getattr(s, k)) for k in counts),
            fmt.number(s.tps),
            *(fmt.ms(getattr(s.latency, q)) for q in LATENCY_FIELDS),
        ]
        for s in rec.scripts
    ]
    cols = ["#", "script", "weight", "transactions", "failed", *counts, "TPS"]
    cols += [f"{q} ms" for q in LATENCY_FIELDS]
    return Table.build(
        cols, rows, caption="Per transaction type", numeric={0, *range(2, len(cols))}
    )


_CHECK_STYLES = {"ok": "good", "warn": "warn"}


def host_checks_table(rec: RunRecord) -> Table | None:
    """The host checks recorded at the start of the run (host.checks), in their order."""
    checks = rec.host.get("checks") if rec.host else None
    if not isinstance(checks, list):
        return None
    rows: list[list[CellValue]] = [
        [
            str(c.get("name")),
            fmt.MISSING if c.get("value") is None else str(c["value"]),
            fmt.MISSING if c.get("recommended") is None else str(c["recommended"]),
            Cell([str(c.get("status"))], _CHECK_STYLES.get(str(c.get("status")), "muted")),
            str(c.get("why") or ""),
        ]
        for c in checks
        if isinstance(c, dict)
    ]
    if not rows:
        return None
    return Table.build(["check", "value", "recommended", "status", "why"], rows,
                       caption="Host checks")  # fmt: skip


def host_facts(host: HostDoc | None) -> list[tuple[str, str]]:
    """Host facts flattened to (key, text): nested dicts as a.b, lists comma-separated, sizes
    in binary units (checks: host_checks_table)."""
    out: list[tuple[str, str]] = []

    def walk(prefix: str, value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        elif value is None:
            return
        elif isinstance(value, list | tuple):
            out.append((prefix, ", ".join(str(v) for v in value)))
        elif isinstance(value, int) and not isinstance(value, bool) and prefix.endswith("_bytes"):
            out.append((prefix, f"{fmt.size(value)} ({value:,})"))
        else:
            out.append((prefix, str(value)))

    walk("", {k: v for k, v in (host or HostDoc()).items() if k != "checks"})
    return out


def _load_engine(rec: RunRecord) -> tuple[str, str]:
    """("pgbench", "18.1") or ("load", "sysbench 1.0.20"): the engine that drove the run."""
    engine = rec.extra.get("load_engine") if isinstance(rec.extra, dict) else None
    if isinstance(engine, dict) and engine.get("name") not in (None, "pgbench"):
        return "load", f"{engine.get('name')} {engine.get('version') or ''}".strip()
    return "pgbench", rec.pgbench_version or fmt.MISSING


def to_json(rec: RunRecord) -> dict[str, object]:
    """The run as data: `runs show --json` and `run --json` print this one document (the
    summary of archive.export.run_to_json plus the context: where the server was
    (environment), the load hosts, split, start skew, network and hosts table
    (views/run_hosts.py), what the percentiles rest on, the summary's lines as the text shows
    them, settings that differ, layers, host, artifacts, series kinds, and the insights'
    statements, plans, log digest, waits)."""
    from dataclasses import asdict

    from pgrig.archive.export import json_safe, run_to_json
    from pgrig.insights import summary

    doc: dict[str, object] = {**run_to_json(rec)}  # with what the views add
    where = run_environment.of(rec)
    doc["managed"] = where.managed  # an older run made on another host said false
    doc["environment"] = where.as_dict()
    doc.update(run_hosts.of(rec).as_dict())  # load_from, start skew, network, hosts
    basis = latency.of(rec)
    doc["latency_basis"] = None if basis is None else json_safe(asdict(basis))
    v = build(rec)  # what the text says, line for line
    doc["summary"] = {
        section: _labelled(pairs)
        for section, pairs in (("about", v.about), ("results", v.results),
                               ("backup", v.backup), ("topology", v.topology))
        if pairs
    }  # fmt: skip
    doc["non_default_settings"] = json_safe(rec.non_default_settings())
    doc["settings_layers"] = json_safe(rec.settings_layers)
    doc["host"] = json_safe(rec.host)
    doc["artifacts"] = dict(rec.artifacts)
    doc["series_kinds"] = sorted(rec.series)
    doc.update(json_safe(summary.parts(rec.insights)))  # statements, plans, log_digest, waits
    doc["harness"] = harness_cost.of(rec).as_dict()
    tpch = rec.extra.get("tpch") if isinstance(rec.extra, dict) else None
    if isinstance(tpch, dict):  # every query's time, Power@Size... (load/engines/tpch_driver)
        doc["tpch"] = json_safe(tpch)
    if (ch := chbench.doc_of(rec)) is not None:  # every analytic query, QpH, per query
        doc["chbench"] = json_safe(ch)
    return doc


def _labelled(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Label -> text; a label said twice keeps both texts ("a; b")."""
    out: dict[str, str] = {}
    for k, v in pairs:
        out[k] = f"{out[k]}; {v}" if k in out else v
    return out
