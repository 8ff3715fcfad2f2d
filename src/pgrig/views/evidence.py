"""The evidence beside a verdict, as every report's comparison table shows it: what a group of
runs shows that explains its figures (requested checkpoints and the log's warnings,
autovacuum, sequential against index scans in the sampled plans, the top wait:
pgrig.insights.changes.evidence), and whether its host differed from the baseline's
(analysis/host_diff.py, the first ok run of each).

The comparison view (a context line), the study view (a column per point) and the tuning
report's confirmation table take it from here, so a verdict never stands without it where
the runs collected insights.
"""

from __future__ import annotations

from collections.abc import Sequence

from pgrig import format as fmt
from pgrig.analysis.host_diff import host_differences
from pgrig.archive.records import RunRecord
from pgrig.insights.changes import evidence as insight_lines


def ok_runs(runs: Sequence[RunRecord]) -> list[RunRecord]:
    return [r for r in runs if r.status == "ok"]


def lines(runs: Sequence[RunRecord]) -> list[str]:
    """What the group's ok runs show (per run, over the runs that collected it)."""
    return insight_lines(ok_runs(runs))


def text(runs: Sequence[RunRecord]) -> str:
    """The lines on one line ("-" when nothing was collected)."""
    return "; ".join(lines(runs)) or fmt.MISSING


def against(
    runs: Sequence[RunRecord], baseline: Sequence[RunRecord], baseline_label: str
) -> tuple[list[str], bool]:
    """The group's lines, and a line when its host differed from the baseline's (then True:
    a warning, since the comparison then measures the host too)."""
    out = lines(runs)
    mine, theirs = ok_runs(runs), ok_runs(baseline)
    if not mine or not theirs or mine[0] is theirs[0]:
        return out, False
    a, b = theirs[0], mine[0]
    diffs = host_differences(a.host, b.host, a.extra, b.extra)
    if not diffs:
        return out, False
    more = f" (+{len(diffs) - 1} more)" if len(diffs) > 1 else ""
    return [*out, f"host differs from {baseline_label}: {diffs[0]}{more}"], True
