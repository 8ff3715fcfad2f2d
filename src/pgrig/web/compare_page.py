"""The compare page: two or more runs, or groups of repeats, side by side; the first column is
the baseline.

Ratios, bounds and verdicts come from the comparison engine (pgrig.analysis.compare), the one
`pgrig runs compare` and `pgrig report compare` use: the same runs give the same answer here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from markupsafe import Markup

from pgrig.analysis.compare import BLOCK_S, DEFAULT_MISRATE, DEFAULT_THRESHOLD, study_point_groups
from pgrig.archive.protocol import RunReader
from pgrig.archive.records import RunRecord
from pgrig.errors import PgrigError
from pgrig.reports.run_charts import overlay_charts
from pgrig.reports.svg import render
from pgrig.request.values import check_int64
from pgrig.table import Table
from pgrig.views import compare
from pgrig.views.compare import Changes, Column, ComparisonView, ContextRow, Delta
from pgrig.views.settings import SettingDiff
from pgrig.web.study_page import CELL_STYLES

MAX_GROUPS = 12
MAX_RUNS = 60  # in all groups together
METHOD_NOTE = (
    f"Ratios are candidate / baseline, x1.234 [lower, upper], with a verdict at a "
    f"{DEFAULT_THRESHOLD:.0%} threshold and {1 - DEFAULT_MISRATE:.0%} bounds from the comparison "
    "engine that `pgrig runs compare` and `pgrig report compare` use: with two or more runs per "
    f"column, over the runs (repeats); with single runs, over block means of at least "
    f"{BLOCK_S:g} s of their per-second values, which is indicative only (one run cannot show "
    "run-to-run variation)."
)


def parse_groups(ids: list[str], groups: list[str]) -> list[list[int]]:
    """The columns to compare, the first being the baseline.

    ?group=1,2,3&group=4-6: groups of repeats (the run lists of `pgrig runs compare`).
    ?ids=5,3: single runs in the order written; the runs page's checkboxes send ?ids=5&ids=3
    (newest first), so repeated ids parameters are sorted oldest first, which makes the older
    run the baseline. Duplicates are dropped."""
    from pgrig.reports.publish import parse_groups as parse_run_lists

    if ids and groups:
        raise PgrigError("use ids= (single runs) or group= (groups of repeats), not both")
    out = parse_run_lists(groups) if groups else [[i] for i in parse_ids(ids)]
    if len(out) < 2:
        raise PgrigError(
            "pick at least two runs or groups to compare (ids=1,2 or group=1,2&group=3,4)"
        )
    if len(out) > MAX_GROUPS:
        raise PgrigError(f"compare at most {MAX_GROUPS} runs or groups at once")
    if sum(map(len, out)) > MAX_RUNS:
        raise PgrigError(f"compare at most {MAX_RUNS} runs in all groups at once")
    return out


def parse_ids(values: list[str]) -> list[int]:
    ids: list[int] = []
    for v in values:
        for part in v.replace(" ", ",").split(","):
            if not part:
                continue
            try:
                n = check_int64(int(part), "run id")
            except ValueError:
                raise PgrigError(f"run ids must be whole numbers, not {part!r}") from None
            if n not in ids:
                ids.append(n)
    if len(values) > 1:
        ids.sort()
    return ids


def compare_url(groups: list[list[int]]) -> str:
    """The page for these columns: ?ids= when every column is one run, else ?group=."""
    if all(len(g) == 1 for g in groups):
        return "/compare?ids=" + ",".join(str(g[0]) for g in groups)
    return "/compare?" + "&".join("group=" + ",".join(map(str, g)) for g in groups)


def baseline_url(groups: list[list[int]], index: int) -> str:
    """The same comparison with column `index` as the baseline."""
    return compare_url([groups[index], *(g for i, g in enumerate(groups) if i != index)])


@dataclass
class ComparePage:
    """The comparison view model (pgrig.views.compare) and what only the page adds: charts,
    links."""

    view: ComparisonView
    charts: list[Markup]
    repeats_url: str | None = None  # the same comparison over the runs' study points
    method_note: str = METHOD_NOTE

    @property
    def paired_note(self) -> str | None:
        """Said when a comparison on the page was judged paired (views.compare.PAIRED_NOTE)."""
        return self.view.paired_note

    @property
    def columns(self) -> list[Column]:
        return self.view.columns

    @property
    def metrics(self) -> list[WebMetricRow]:
        return [
            WebMetricRow(m.label, m.base, [_web_delta(d) for d in m.others])
            for m in self.view.metrics
        ]

    @property
    def setup(self) -> list[ContextRow]:
        return self.view.context

    @property
    def settings(self) -> list[SettingDiff]:
        return self.view.settings

    @property
    def same_settings(self) -> int:
        return self.view.same_settings

    @property
    def hosts(self) -> Table | None:
        """Every host of the compared runs (views/compare_hosts.py), columns by run."""
        names = [", ".join(f"#{i}" for i in c.ids) for c in self.columns]
        return compare.hosts_table(self.view, names)

    @property
    def changes(self) -> list[Changes]:
        return self.view.changes

    @property
    def groups(self) -> list[list[int]]:
        return [c.ids for c in self.columns]

    @property
    def runs(self) -> list[RunRecord]:
        return self.view.runs


@dataclass
class WebMetricRow:
    label: str
    base: str
    others: list[Delta]


def _web_delta(d: Delta) -> Delta:
    """The view's delta with the page's CSS class for its style."""
    return replace(d, style=CELL_STYLES.get(d.style, ""))


def build(groups: list[list[RunRecord]], repeats_url: str | None = None) -> ComparePage:
    view = compare.build(groups)
    runs = [r for g in groups for r in g]
    charts = [render(c) for c in overlay_charts([(run_label(r), r.series) for r in runs])]
    return ComparePage(view, charts, repeats_url)


def study_repeats_url(archive: RunReader, groups: list[list[RunRecord]]) -> str | None:
    """The page comparing the repeats of these single runs' study points, if they have any."""
    points = study_point_groups(archive, groups)
    return compare_url(points) if points else None


def run_label(rec: RunRecord) -> str:
    note = (rec.note or rec.study_point or rec.workload or "").strip()
    return f"#{rec.id} {note[:30]}".strip()
