"""Sections both study reports share: the set-up, the statistics note, the hosts, the harness's
own cost and the runs table."""

from __future__ import annotations

from dataclasses import replace

from pgrig import format
from pgrig.archive.records import RunRecord
from pgrig.metrics.cpu_share import BUSY_HOST
from pgrig.record.documents import HostDoc
from pgrig.reports.document import (
    Block,
    Cell,
    CellValue,
    KeyValues,
    Paragraph,
    Section,
    Table,
)
from pgrig.reports.summary import PointSummary, StudyData, fmt, short_version
from pgrig.study.plan import display_value
from pgrig.study.spec import StudyRun
from pgrig.views import study, study_hosts
from pgrig.views.study import StudyView


def setup_section(data: StudyData) -> Section:
    spec, rec = data.spec, data.record
    planned = len(data.plan.runs)
    done = sum(len(p.ok) for p in data.points)
    items = [
        ("status", f"{rec.status}: {done} of {planned} runs done"),
        ("created", format.timestamp(rec.created_at)),
    ]
    for env in spec.environments.values():
        versions = sorted(
            {
                v
                for p in data.points
                for r in p.ok
                if r.env_name == env.name and (v := short_version(r.server_version))
            }
        )
        what = f"PostgreSQL {', '.join(v for v in versions if v) or env.version or '?'}"
        what += f", profile {env.profile or 'default'}, environment {env.name}"
        if env.settings:
            what += "; settings " + ", ".join(f"{k}={v}" for k, v in env.settings.items())
        items.append((f"environment {env.key}", what))
    ds = spec.dataset
    items.append(("data", f"{ds.scenario}, {ds.size_label()}, regenerated per {ds.reset}"))
    items.append(("load", describe_run(spec.run)))
    items.append(
        (
            "repeats",
            f"{spec.repeats} per point, {spec.order}"
            + (
                " (every round runs each point once, in a shuffled order)"
                if spec.order == "interleaved"
                else ""
            ),
        )
    )
    host = next((r.host for p in data.points for r in p.ok if r.host), HostDoc())
    if host:
        items.append(("host", host_summary(host)))
    blocks: list[Block] = [KeyValues(items)]
    if rec.status != "done":  # first: every figure of the report rests on what it ran
        blocks.insert(
            0,
            Paragraph(
                f"This study is {rec.status}: {done} of {planned} runs done; its figures, "
                "verdicts and best point rest on those runs alone.",
                "warn",
            ),
        )
    return Section("Set-up", blocks)


def host_summary(host: HostDoc) -> str:
    """One line a reader can take in: 'db1: AMD EPYC 7B13, 2 CPUs (1 core), RAM 23.5 GiB,
    Linux 6.1.0, Debian GNU/Linux 12 (bookworm), data on ext4 (/dev/sda1)'; the checks and
    the other facts are in each run's own report."""
    parts = []
    if host.get("hostname"):
        parts.append(f"{host['hostname']}:")
    if host.get("cpu_model"):
        parts.append(f"{host['cpu_model']},")
    if host.get("cpu_logical"):
        cores = host.get("cpu_physical")
        core_text = f" ({cores} {'core' if cores == 1 else 'cores'})" if cores else ""
        parts.append(f"{host['cpu_logical']} CPUs{core_text},")
    if isinstance(host.get("ram_bytes"), int | float):
        parts.append(f"RAM {format.size(host['ram_bytes'])},")
    if host.get("kernel"):
        parts.append(f"Linux {host['kernel']},")
    if host.get("os_release"):
        parts.append(f"{host['os_release']},")
    data = host.get("data")
    if isinstance(data, dict) and data.get("fs_type"):
        parts.append(f"data on {data['fs_type']} ({data.get('device') or '?'})")
    return " ".join(parts).rstrip(",:") or "unknown"


def describe_run(run: StudyRun) -> str:
    parts = [f"workload {display_value(run.workload)}", f"{run.clients} clients"]
    parts.append(f"{run.threads} threads")
    if run.duration_s is not None:
        parts.append(f"{format.duration(run.duration_s)} measured")
    if run.transactions_per_client is not None:
        parts.append(f"{run.transactions_per_client} transactions per client")
    parts.append(f"{format.duration(run.warmup_s)} warm-up" if run.warmup_s else "no warm-up")
    if run.rate:
        parts.append(f"rate {run.rate:g} tps")
    if run.protocol != "simple":
        parts.append(f"protocol {run.protocol}")
    if run.via != "direct":
        parts.append(f"via {run.via}")
    return ", ".join(parts)


def statistics_note(data: StudyData) -> Paragraph:
    spec = data.spec
    conf = f"{(1 - spec.misrate) * 100:g}%"
    text = (
        f"{data.plan.figure.label} is the Hodges-Lehmann centre of the repeats (one value per "
        "run, warm-up "
        f"excluded), with distribution-free {conf} bounds. {verdict_rules(spec.threshold)}"
    )
    if any(p.tps is not None and p.tps.insufficient for p in data.points):
        text += (
            f" Some points have too few repeats for {conf} bounds: their bounds are the "
            "full range of the values (marked 'range'), which holds less often."
        )
    return Paragraph(text, "note")


def verdict_rules(threshold: float) -> str:
    """How comparisons read, for the notes under every table of comparisons."""
    t = f"{threshold * 100:g}%"
    return (
        f"A comparison is the ratio candidate / baseline with its bounds, x1.234 [lower, upper], "
        f"and a verdict at the {t} threshold: faster if the lower bound exceeds 1 + {t}, slower "
        f"if the upper bound is below 1 - {t} (for latency, the other way round), equivalent if "
        f"both bounds lie within 1 +/- {t} and include 1, otherwise inconclusive (with the "
        "repeats per side likely needed to decide)."
    )


def cpu_cell(ps: PointSummary) -> str:
    c = ps.cpu
    if all(v is None for v in c.values()):
        return "-"
    return "/".join(fmt(c.get(k), 0) for k in ("user", "system", "iowait", "idle"))


def stability_cell(ps: PointSummary) -> Cell:
    """CV and drift of the point's runs, and how many of them ran on a busy host."""
    lines: list[str] = []
    style = None
    if ps.stability and ps.max_cv is not None:
        lines.append(f"max CV {ps.max_cv * 100:.1f}%")
        if ps.drift_runs:
            lines.append(f"drift in {ps.drift_runs} of {len(ps.stability)} runs")
            style = "warn"
    busy = busy_host_runs(ps.ok)
    if busy:
        lines.append(f"busy host in {len(busy)} of {len(ps.ok)} runs")
        style = "warn"
    return Cell(lines, style) if lines else Cell.of(None)


def busy_host_runs(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs that carry the busy-host warning (metrics/cpu_share.py)."""
    return [r for r in runs if any(w.get("code") == BUSY_HOST for w in r.warnings())]


def runs_section(data: StudyData, point_title: str = "point") -> Section:
    rows: list[list[CellValue]] = []
    drift = []
    busy: list[str] = []
    for ps in data.points:
        stab = {s.run_id: s for s in ps.stability}
        for r in ps.runs:
            s = stab.get(r.id)
            status = Cell([r.status], None if r.status == "ok" else "bad")
            warm = "-"
            if s is not None and s.warmup_s:
                warm = f"{s.warmup_s:g}s" + (
                    f", {fmt(s.warmup_tps)} tps" if s.warmup_tps is not None else ""
                )
            if s is not None and s.drift:
                drift.append(f"run {r.id} ({ps.point.label}): {s.describe()}")
            if busy_host_runs([r]):
                share = r.extra.get("cpu_share") or {}
                other = share.get("other_cpu_pct_core")  # this run's own figure
                figure = f": {other:.0f}% of one core" if isinstance(other, int | float) else ""
                busy.append(f"run {r.id} ({ps.point.label}){figure}")
            rows.append(
                [
                    str(r.id),
                    ps.point.label,
                    str(r.repeat + 1),
                    status,
                    fmt(data.plan.figure.value(r)),  # TPS, or a TPC-H test's own
                    format.ms(r.latency.p95),
                    warm,
                    Cell([s.describe()], "warn" if s.drift else None) if s else Cell.of(None),
                    r.error or "",
                ]
            )
    for r in data.orphans:
        rows.append([str(r.id), f"(not in plan: {r.study_point})", str(r.repeat + 1), r.status,
                     fmt(data.plan.figure.value(r)), format.ms(r.latency.p95), "-", "-",
                     r.error or ""])  # fmt: skip
    table = Table.build(
        [
            "run",
            point_title,
            "repeat",
            "status",
            data.plan.figure.label,
            "p95 ms",
            "warm-up",
            "stability",
            "error",
        ],
        rows,
        caption="Every run, in plan order. Stability is over the measured window: coefficient "
        "of variation of per-second TPS, linear trend, and the last fifth against the first.",
        numeric={0, 2, 4, 5},
    )
    blocks: list = [table]
    if drift:
        blocks.insert(0, Paragraph("Drift flagged: " + "; ".join(drift), "warn"))
    if busy:
        text = "Busy host (other processes used more CPU than the limits; see each run): "
        blocks.insert(0, Paragraph(text + "; ".join(busy), "warn"))
    return Section("Runs", blocks)


def hosts_section(view: StudyView) -> Section | None:
    """Each point's hosts: CPU and the RTT of each network path (views/study_hosts.py), the
    table `study show` prints; None when no run of the study had other hosts."""
    table = study_hosts.table(view.hosts)
    if table is None:
        return None
    blocks: list[Block] = [replace(table, caption=None)]
    if table.note:
        blocks.append(Paragraph(table.note, "note"))
    return Section("Hosts", blocks)


def harness_section(view: StudyView) -> Section | None:
    """What pgrig itself took from each point's runs (views/study.py), the lines `study show`
    prints; None when no point has a successful run."""
    items = study.harness_items(view)
    return Section(study.HARNESS_TITLE.capitalize(), [KeyValues(items)]) if items else None
