"""The run page: a RunRecord → charts and tables. Nothing here computes results; it only shows
what the runner recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from markupsafe import Markup

from pgrig.archive.records import RunRecord
from pgrig.errors import NotFound, PgrigError
from pgrig.insights.summary import WhyPart, why_parts
from pgrig.record.documents import HostCheck, HostDoc, RunExtra
from pgrig.reports import run_charts
from pgrig.reports.svg import render
from pgrig.table import Table
from pgrig.views import backup_figures, run_hosts, run_summary
from pgrig.views.run_summary import RunSummary
from pgrig.views.settings import SettingRow, non_default_rows


@dataclass
class ArtifactRow:
    name: str
    size: int | None  # None: the file is not on this machine
    path: str


@dataclass
class MetricSection:
    title: str
    charts: list[Markup]
    quiet: list[str]
    notes: list[str]


@dataclass
class RunPage:
    rec: RunRecord
    load_charts: list[Markup]  # throughput, latency, failures over time
    metrics: list[MetricSection]
    settings: list[SettingRow]
    host: list[tuple[str, str]]
    artifacts: list[ArtifactRow]
    extra: list[tuple[str, str]] = field(default_factory=list)
    why: list[WhyPart] = field(default_factory=list)  # pgrig.insights.summary
    insights_notes: list[str] = field(default_factory=list)
    host_checks: list[HostCheck] = field(default_factory=list)  # host.checks, as recorded
    summary: RunSummary | None = None  # pgrig.views.run_summary
    hosts: Table | None = None  # every host of the run (views/run_hosts.py)
    backup: list[tuple[str, str]] = field(default_factory=list)  # views/backup_figures.py
    topology: list[tuple[str, str]] = field(default_factory=list)


def build(rec: RunRecord) -> RunPage:
    pgbench = rec.series.get("pgbench") or {}
    metrics = [
        MetricSection(cs.title, [render(c) for c in cs.charts], cs.quiet, cs.notes)
        for cs in run_charts.metric_chart_sets(rec.series)
    ]
    return RunPage(
        rec=rec,
        load_charts=[render(c) for c in run_charts.load_charts(pgbench)],
        metrics=metrics,
        settings=settings_rows(rec),
        host=host_rows(rec.host),  # its checks have their own table (host_facts leaves them)
        artifacts=artifact_rows(rec),
        extra=extra_rows(rec.extra),
        why=why_parts(rec.insights),
        insights_notes=[str(n) for n in (rec.insights or {}).get("notes") or []],
        host_checks=host_checks(rec.host),
        hosts=run_hosts.hosts_table(rec),
        backup=backup_figures.rows(rec),
        topology=backup_figures.topology_rows(rec),
        summary=run_summary.build(rec),
    )


def host_checks(host: HostDoc) -> list[HostCheck]:
    """The host checks recorded at the start of the run (host.checks), in their order."""
    checks: Any = host.get("checks")  # JSON from the archive: checked here
    return (
        [cast(HostCheck, c) for c in checks if isinstance(c, dict)]
        if isinstance(checks, list)
        else []
    )


def settings_rows(rec: RunRecord) -> list[SettingRow]:
    """The settings that differ from PostgreSQL's built-in defaults (pgrig.views.settings)."""
    return non_default_rows(rec)


def host_rows(host: HostDoc) -> list[tuple[str, str]]:
    """Host facts flattened to (key, text) (pgrig.views.run_summary.host_facts)."""
    return run_summary.host_facts(host)


def _text(v: object) -> str:
    if isinstance(v, dict | list):
        return json.dumps(v, default=str)
    return str(v)


def extra_rows(extra: RunExtra) -> list[tuple[str, str]]:
    """Everything else the run recorded (warnings have their own place at the top)."""
    shown = [(k, v) for k, v in sorted(extra.items()) if k != "warnings"]
    return [(k, _text(v)) for k, v in shown if v not in (None, {}, [])]


def artifact_rows(rec: RunRecord) -> list[ArtifactRow]:
    rows = []
    for name, rel in sorted(rec.artifacts.items()):
        try:
            p = resolve_artifact(rec, name)
            size: int | None = p.stat().st_size
        except (PgrigError, OSError):
            size = None
        rows.append(ArtifactRow(name, size, rel))
    return rows


def resolve_artifact(rec: RunRecord, name: str) -> Path:
    """The file of artifact `name` of this run: only names the run recorded, only inside the
    artifacts root (relative paths are under it; anything resolving outside is refused)."""
    from pgrig.archive.artifacts import artifact_path

    rel = rec.artifacts.get(name)
    if rel is None:
        raise NotFound(f"run {rec.id} has no artifact {name!r}")
    p = artifact_path(rel)
    if not p.is_file():
        raise NotFound(f"artifact {name!r} of run {rec.id} is not on this machine")
    return p
