"""What a tuning study found and why, computed once for the report, `pgrig tune show` and the
summary: the confirmation's verdicts (at the misrate of the look that ended it), the ablation's
share of the gain per knob or group (tune/ablation.py), how much of the gain durable settings
keep, the evidence per configuration, and one reason per recommended setting.

A setting's reason is its measured share when the ablation measured it; otherwise its search
importance, labelled as such (PED-ANOVA says which knobs the search varied among its best
trials, not what a knob is worth).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pgrig.analysis.compare import DEFAULT_MISRATE, Comparison
from pgrig.archive.records import RunRecord
from pgrig.insights.summary import parts
from pgrig.record.documents import AblationDoc, StudyExtra
from pgrig.tune import ablation, confirm
from pgrig.tune.runner import BASELINE_POINT

WAL_WRITE_EVENTS = ("walwrite",)  # LWLock:WALWrite and IO:WalWrite
WAL_SYNC_EVENTS = ("walsync",)  # IO:WalSync


@dataclass(frozen=True)
class EvidenceRow:
    """Means over a configuration's ok runs in the measured window."""

    config: str
    runs: int
    tps: float
    wal_per_tx: float  # bytes
    wal_write_pct: float | None  # of the wait samples of active sessions
    wal_sync_pct: float | None
    checkpoints_timed: float
    checkpoints_req: float
    hit_ratio: float
    cpu_idle: float


@dataclass(frozen=True)
class Reason:
    setting: str
    value: str
    why: str  # "ablation: 62% [48, 76] of the gain (x1.39 [1.30, 1.49] without it)"
    measured: bool  # from the ablation (True) or the search importance (False)


@dataclass
class Attribution:
    verdicts: list[confirm.Verdict]
    misrate: float
    stopped_at: int | None  # the rounds after which the confirmation stopped
    gain: Comparison | None  # best vs baseline, when "faster"
    shares: list[ablation.Share] = field(default_factory=list)
    durable: ablation.Share | None = None  # best vs the best with durability back on
    ablation_repeats: int = 0
    # why a study that ended has no ablation ("not run (--ablation-repeats 0)"), said where
    # its shares would be; None: it has one, or the study did not get there (unfinished)
    ablation_skipped: str | None = None
    evidence: list[EvidenceRow] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)
    importances: dict[str, float] = field(default_factory=dict)
    # "interrupted in its confirmation after 1 of 4 rounds": a study that did not end, said
    # first on every surface (None: it ended); see unfinished()
    unfinished: str | None = None
    # the confirmation ended: its verdicts are the study's answer (which may be "inconclusive":
    # confirmed faster is cli/tune.unconfirmed() saying nothing against it)
    confirmation_ended: bool = True

    @property
    def shares_sum(self) -> float | None:
        found = [s.share for s in self.shares if s.share is not None]
        return sum(found) if found else None

    def durable_keeps(self) -> tuple[float, float, float] | None:
        """The ratio durable-only / baseline (point, and over the durable unit's bounds):
        the gain over the baseline divided by the best's ratio to durable-only."""
        if self.gain is None or self.gain.ratio is None or self.durable is None:
            return None
        c = self.durable.comparison
        if c is None or c.ratio is None or c.lower is None or c.upper is None:
            return None
        g = self.gain.ratio
        return g / c.ratio, g / c.upper, g / c.lower


def build(
    extra: StudyExtra,
    runs: Sequence[RunRecord],
    metric: str,
    whole: Sequence[RunRecord] = (),
    status: str = "done",
) -> Attribution:
    """`runs`: the study's runs; `whole`: the confirmation and ablation runs with their series
    and insights (the evidence), when loaded; `status`: the study's (interrupted, ...)."""
    threshold = float(extra.get("threshold") or 0.02)
    misrate = confirm.misrate_of(extra)
    reference = confirm.reference_of(extra)
    found = confirm.verdicts(runs, metric, threshold, misrate, reference)
    gain = next(
        (
            v.comparison
            for v in found
            if v.question == confirm.VS_BASELINE
            and v.comparison is not None
            and v.comparison.verdict == "faster"
        ),
        None,
    )
    out = Attribution(found, misrate, extra.get("confirm_stopped_at"), gain)
    out.confirmation_ended = extra.get("confirm_stopped_at") is not None
    out.unfinished = unfinished(status, extra, runs)
    out.importances = dict(extra.get("importances") or {})
    plan = extra.get("ablation") or {}
    units = [ablation.Unit(u["key"], tuple(u["knobs"])) for u in plan.get("units") or []]
    extra_configs = [c for c in plan.get("configs") or {} if c == ablation.DURABLE]
    if units:
        ratio = gain.ratio if gain is not None else None
        # the ablation is its own family of questions, asked once after the confirmation:
        # Holm-corrected at the default misrate for the whole family, not at a look's share
        measured = ablation.shares(
            runs, units, metric, threshold, ratio, DEFAULT_MISRATE, extra_configs
        )
        out.shares = [s for s in measured if s.unit.key != ablation.DURABLE]
        out.durable = next((s for s in measured if s.unit.key == ablation.DURABLE), None)
        if out.durable is None:  # a single durability knob: its own unit is durable-only
            off = ablation.unsafe_off((extra.get("best") or {}).get("settings") or {})
            out.durable = next(
                (s for s in out.shares if off and set(s.unit.knobs) == set(off)), None
            )
        out.ablation_repeats = int(plan.get("repeats") or 0)
    elif out.unfinished is None:
        out.ablation_skipped = ablation_skipped(extra)
    out.evidence = evidence_rows(whole, [*(k for k in ablation_names(plan))], reference)
    out.reasons = reasons(extra, out)
    return out


def unfinished(status: str, extra: StudyExtra, runs: Sequence[RunRecord]) -> str | None:
    """Where a study that did not end stopped, in words ("interrupted in its confirmation
    after 1 of 4 rounds: ..."); None for a study that ended (done)."""
    if status == "done":
        return None
    ok = {(r.study_point or "", r.repeat) for r in runs if r.status == "ok"}
    if not any(point == BASELINE_POINT for point, _ in ok):  # before any trial could run
        if extra.get("phase") == "data generation":
            made = extra.get("dataset") or "its data"
            where = f"in its data generation ({made}), before its baseline: nothing measured"
        else:
            where = "in its baseline run, before any trial: nothing measured"
    elif extra.get("confirm_stopped_at") is None:
        # the reference is the preset's (pgtune-dw for analytics): any confirm- point
        prefix = confirm.point_key("")
        whole, begun = _rounds(ok, lambda p: p.startswith(prefix), len(confirm.configs()))
        by_round = whole or begun
        planned = _planned(extra)
        searched = isinstance(planned, int) and _trials_done(extra) >= planned
        if by_round or (extra.get("best") and searched):
            rest = (
                "its verdicts rest on those rounds alone"
                if whole
                else "no round is whole, so there is no verdict"
            )
            where = (
                f"in its confirmation after {whole} of "
                f"{extra.get('confirm_repeats', '?')} rounds{begun}: the best trial is not "
                f"confirmed, {rest}"
            )
        else:
            where = (
                f"in its search after {_trials_done(extra)} of {planned} trials: nothing confirmed"
            )
    else:
        plan = extra.get("ablation") or {}
        names = list(plan.get("configs") or {})
        keys = {ablation.point_key(n) for n in names}
        whole, begun = _rounds(ok, keys.__contains__, len(keys))
        if names and whole < int(plan.get("repeats") or 0):
            rest = (
                "the shares of the gain rest on those rounds alone"
                if whole
                else "no round is whole, so no share of the gain is measured"
            )
            where = f"in its ablation after {whole} of {plan.get('repeats')} rounds{begun}: {rest}"
        else:
            where = "after its confirmation"
    if status == "failed" and extra.get("error"):  # what stopped it (tune/runner.py)
        return f"{status} {where}; it stopped on: {extra.get('error')}"
    return f"{status} {where}"


def _rounds(ok: set[tuple[str, int]], of: Callable[[str], bool], n: int) -> tuple[int, str]:
    """Of interleaved rounds (one run of each of the `n` points `of` takes): how many were
    measured whole, and the runs of one stopped inside (' and 1 of 3 runs of the next'; ''
    for none). A round counts whole only with every point in it: the ablation's was counted
    by its best alone, so one begun said '1 of 2 rounds' after a single run."""
    by_round: dict[int, int] = {}
    for point, rep in ok:
        if of(point):
            by_round[rep] = by_round.get(rep, 0) + 1
    whole = sum(1 for runs in by_round.values() if runs >= n)
    part = [runs for runs in by_round.values() if runs < n]
    return whole, f" and {part[0]} of {n} runs of the next" if part else ""


def _trials_done(extra: StudyExtra) -> int:
    return sum(1 for t in extra.get("trials") or [] if t.get("state") in ("complete", "pruned"))


def _planned(extra: StudyExtra) -> int | str:
    planned = extra.get("trials_planned")
    return planned if isinstance(planned, int) else "?"


def holm_text(a: Attribution) -> str:
    """How the ablation's comparisons were judged: Holm over the family, each at its level."""
    judged = [s.comparison for s in [*a.shares, *([a.durable] if a.durable else [])]]
    levels = sorted({c.misrate for c in judged if c is not None})
    k = len({id(c) for c in judged if c is not None})
    if k <= 1:
        return f"One comparison, judged at misrate {DEFAULT_MISRATE:g}."
    return (
        f"The {k} comparisons are corrected for multiplicity with Holm's step-down rule "
        f"(misrate {DEFAULT_MISRATE:g} for the whole family): each is judged at "
        f"{DEFAULT_MISRATE:g}/k, {DEFAULT_MISRATE:g}/(k-1), ... in the order of its strength, "
        "its bounds as wide as its level (here "
        + ", ".join(f"{m:.3g}" for m in levels)
        + "); the basis column gives each one's bounds."
    )


def ablation_names(plan: AblationDoc) -> list[str]:
    return list(plan.get("configs") or {})


def evidence_rows(
    whole: Sequence[RunRecord], ablated: Sequence[str], reference: str = confirm.PGTUNE_PROFILE
) -> list[EvidenceRow]:
    """Per configuration (the confirmation's, then the ablation's)."""
    rows = []
    named: list[tuple[str, list[RunRecord]]] = list(confirm.groups(whole, reference).items())
    for name, group in ablation.groups(whole, ablated).items():
        label = {ablation.BEST: "ablation: best", ablation.DURABLE: "ablation: durable only"}.get(
            name, f"ablation: without {name}"
        )
        named.append((label, group))
    for config, group in named:
        if not group:
            continue
        tps = _mean([r.tps for r in group])
        wal = _mean([_window_mean(r, "wal_bytes") for r in group])
        rows.append(
            EvidenceRow(
                config=config,
                runs=len(group),
                tps=tps,
                wal_per_tx=wal / tps if tps and not math.isnan(wal) else math.nan,
                wal_write_pct=wait_pct(group, WAL_WRITE_EVENTS),
                wal_sync_pct=wait_pct(group, WAL_SYNC_EVENTS),
                checkpoints_timed=_mean([_window_sum(r, "checkpoints_timed") for r in group]),
                checkpoints_req=_mean([_window_sum(r, "checkpoints_req") for r in group]),
                hit_ratio=_mean([_window_mean(r, "hit_ratio") for r in group]),
                cpu_idle=_mean([r.cpu_idle for r in group]),
            )
        )
    return rows


def wait_pct(group: Sequence[RunRecord], names: Sequence[str]) -> float | None:
    """The share of the group's sampled active sessions waiting on one of `names` (the wait
    event's name without its type, case-insensitive); None when no run sampled waits."""
    seen = active = 0.0
    for r in group:
        doc = parts(r.insights)["waits"]
        if not doc.get("collected"):
            continue
        active += float(doc.get("active_seen") or 0)
        for e in doc.get("events") or []:
            event = str(e.get("event", "")).rsplit(":", 1)[-1].lower()
            if event in names:
                seen += float(e.get("seen") or 0)
    return 100.0 * seen / active if active else None


def ablation_skipped(extra: StudyExtra) -> str:
    """Why an ended study has no ablation: none was asked, or nothing to take back."""
    asked = extra.get("ablation_repeats")
    if asked == 0:
        return "not run (--ablation-repeats 0)"
    if asked is not None:
        return "not run: no setting of the best differs from the environment's own"
    return "not run (no ablation rounds, or no setting differs from the environment's own)"


def reasons(extra: StudyExtra, a: Attribution) -> list[Reason]:
    """One reason per setting of the best configuration (module docstring)."""
    best = (extra.get("best") or {}).get("settings") or {}
    by_knob = {k: s for s in a.shares for k in s.unit.knobs}
    out = []
    for name, value in best.items():
        s = by_knob.get(name)
        if s is not None and s.comparison is not None and s.comparison.ratio is not None:
            single = len(s.unit.knobs) == 1
            where = "" if single else f" (as part of {_group_name(s.unit.key, s.unit.knobs)})"
            verdict = s.comparison.verdict or "no verdict"
            why = (
                f"ablation{where}: the best is {s.effect_text} against itself with "
                f"{'it' if single else 'the group'} put back ({verdict}); "
            )
            why += f"{s.share_text} of the gain" if s.share is not None else f"no share: {s.reason}"
            out.append(Reason(name, value, why, True))
            continue
        imp = a.importances.get(name)
        why = (
            f"search importance {imp * 100:.1f}% (PED-ANOVA; not a measured effect)"
            if imp is not None
            else f"not measured (ablation {a.ablation_skipped}; no search importance)"
            if a.ablation_skipped
            else "not measured (no ablation run of it, no search importance)"
        )
        out.append(Reason(name, value, why, False))
    return out


def _group_name(key: str, knobs: Sequence[str]) -> str:
    """A group as each of its settings' reason names it: its members when they are few, else
    their number (20 names repeated on each of 20 lines hid the reasons; the ablation's own
    table lists them once)."""
    if len(knobs) <= GROUP_NAMED_UP_TO:
        return f"{key}: {', '.join(knobs)}"
    return f"{key}: {len(knobs)} settings put back together"


GROUP_NAMED_UP_TO = 3


def _mean(values: Sequence[float | None]) -> float:
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def _window(rec: RunRecord, column: str) -> list[float]:
    cols = rec.series.get("pg") or {}
    t, y = cols.get("t") or [], cols.get(column) or []
    end = rec.measured_s if rec.measured_s is not None else rec.duration_s
    return [
        float(v)
        for ti, v in zip(t, y, strict=False)
        if ti is not None and v is not None and ti >= 0 and (end is None or ti < end)
    ]


def _window_mean(rec: RunRecord, column: str) -> float:
    return _mean(list(_window(rec, column)))


def _window_sum(rec: RunRecord, column: str) -> float:
    return float(sum(_window(rec, column)))
