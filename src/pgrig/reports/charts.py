"""Charts as matplotlib Figures (object API, Agg canvas: no display, no global pyplot state).

Each function returns a Figure; the Markdown renderer saves it as PNG, the HTML one as SVG.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a GUI backend, even if the caller's environment asks for one
from matplotlib.figure import Figure

WARMUP_COLOR = "#f0ad4e"
BAND_COLOR = "#9ecae1"


def _label(text: Any, width: int = 28) -> str:
    """User text as a literal label: '$' would start mathtext; long names are clipped."""
    s = str(text).replace("$", r"\$")
    return s if len(s) <= width else s[: width - 1] + "…"


def _x_axis(ax: Any, cats: list[str], series: dict[str, list[Any]], log_x: bool) -> None:
    """Categories as labelled ticks; a log axis labelled at the swept values, not at 10^k."""
    if cats:
        ax.set_xticks(range(len(cats)), [_label(c) for c in cats])
    elif log_x:
        values = sorted({float(p[0]) for pts in series.values() for p in pts})
        ax.set_xscale("log")
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.minorticks_off()


def _style(ax: Any) -> None:
    ax.grid(True, axis="y", alpha=0.3)
    ax.spines["top"].set_visible(False)
    ax.spines["right"].set_visible(False)


def iteration_chart(
    labels: Sequence[str],
    centers: Sequence[float | None],
    lowers: Sequence[float | None],
    uppers: Sequence[float | None],
    samples: Sequence[Sequence[float]],
    threshold: float,
    y_label: str = "TPS",
) -> Figure:
    """TPS per iteration: bars at the centre, whiskers at the bounds, dots for each repeat,
    and a band of +/- threshold around iteration 0 (changes inside it are not 'detectable')."""
    n = len(labels)
    fig = Figure(figsize=(max(6.0, 0.9 * n + 2), 4.2), layout="constrained")
    ax = fig.add_subplot()
    xs = list(range(n))
    heights = [c if c is not None else 0.0 for c in centers]
    ax.bar(xs, heights, color="#6baed6", width=0.6, zorder=2)
    for x, c, lo, hi in zip(xs, centers, lowers, uppers, strict=True):
        if c is not None and lo is not None and hi is not None:
            ax.errorbar(
                x, c, yerr=[[c - lo], [hi - c]], fmt="none", ecolor="#08306b", capsize=5, zorder=3
            )
    for x, vals in zip(xs, samples, strict=True):
        if vals:
            jitter = [x + (i - (len(vals) - 1) / 2) * 0.06 for i in range(len(vals))]
            ax.scatter(jitter, vals, s=12, color="#252525", zorder=4, alpha=0.7)
    if centers and centers[0] is not None:
        base = centers[0]
        ax.axhspan(base * (1 - threshold), base * (1 + threshold), color=BAND_COLOR, alpha=0.35)
        ax.axhline(base, color="#3182bd", linestyle="--", linewidth=1)
    ax.set_xticks(xs, [f"{i}: {_label(label, 28)}" for i, label in enumerate(labels)])
    for tick in ax.get_xticklabels():
        tick.set_rotation(30 if n > 3 else 0)
        tick.set_horizontalalignment("right" if n > 3 else "center")
    ax.set_ylabel(y_label)
    ax.set_ylim(bottom=0)
    _style(ax)
    return fig


def sweep_chart(
    x_label: str,
    series: dict[str, list[tuple[Any, float | None, float | None, float | None]]],
    y_label: str = "TPS",
    categorical: bool = False,
    log_x: bool = False,
) -> Figure:
    """One line per series: (x, centre, lower, upper) points with whiskers at the bounds."""
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    cats: list[str] = []
    if categorical:
        for pts in series.values():
            for x, *_ in pts:
                if str(x) not in cats:
                    cats.append(str(x))
    for label, pts in series.items():
        pts = [p for p in pts if p[1] is not None]
        if not pts:
            continue
        xs = [cats.index(str(p[0])) if categorical else float(p[0]) for p in pts]
        ys = [p[1] for p in pts]
        lo = [p[1] - p[2] if p[2] is not None else 0 for p in pts]
        hi = [p[3] - p[1] if p[3] is not None else 0 for p in pts]
        ax.errorbar(
            xs, ys, yerr=[lo, hi], marker="o", markersize=4, capsize=3, label=_label(label, 40)
        )
    _x_axis(ax, cats, series, log_x)
    ax.set_xlabel(_label(x_label, 40))
    ax.set_ylabel(y_label)
    ax.set_ylim(bottom=0)
    if len(series) > 1:
        ax.legend(fontsize=8)
    _style(ax)
    return fig


def latency_sweep_chart(
    x_label: str,
    series: dict[str, list[tuple[Any, dict[str, float | None]]]],
    categorical: bool = False,
    log_x: bool = False,
) -> Figure:
    """Latency percentiles per point: one colour per series, one line style per percentile."""
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    styles = {"p50": ":", "p95": "-", "p99": "--"}
    cats: list[str] = []
    if categorical:
        for pts in series.values():
            for x, _ in pts:
                if str(x) not in cats:
                    cats.append(str(x))
    colors = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, pts) in enumerate(series.items()):
        for q, ls in styles.items():
            xy = [
                (cats.index(str(x)) if categorical else float(x), lat[q])
                for x, lat in pts
                if lat.get(q) is not None
            ]
            if xy:
                ax.plot(
                    [a for a, _ in xy],
                    [b for _, b in xy],
                    linestyle=ls,
                    marker="o",
                    markersize=3,
                    color=colors[i % len(colors)],
                    label=_label(f"{label} {q}" if len(series) > 1 else q, 44),
                )
    _x_axis(ax, cats, series, log_x)
    ax.set_xlabel(_label(x_label, 40))
    ax.set_ylabel("latency, ms")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, ncol=2)
    _style(ax)
    return fig


def run_chart(
    t: Sequence[float],
    tps: Sequence[float | None],
    warmup_s: float,
    latency: dict[str, Sequence[float | None]] | None = None,
    cpu: dict[str, Sequence[float | None]] | None = None,
    cpu_t: Sequence[float] | None = None,
    title: str | None = None,
) -> Figure:
    """TPS over time with the warm-up shaded; latency percentiles and CPU below when known."""
    panels = 1 + bool(latency) + bool(cpu)
    fig = Figure(figsize=(8.5, 2.6 * panels + 0.6), layout="constrained")
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    ax = axes[0]
    ax.plot(t, [v if v is not None else math.nan for v in tps], color="#3182bd", linewidth=1.2)
    ax.set_ylabel("TPS")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(_label(title, 90), fontsize=10)
    i = 1
    if latency:
        lax = axes[i]
        for name, vals in latency.items():
            lax.plot(t, [v if v is not None else math.nan for v in vals], linewidth=1, label=name)
        lax.set_ylabel("latency, ms")
        lax.set_ylim(bottom=0)
        lax.legend(fontsize=7, ncol=4)
        i += 1
    if cpu:
        cax = axes[i]
        ct = cpu_t if cpu_t is not None else t
        for name, vals in cpu.items():
            cax.plot(ct, [v if v is not None else math.nan for v in vals], linewidth=1, label=name)
        cax.set_ylabel("CPU, %")
        cax.set_ylim(0, 100)
        cax.legend(fontsize=7, ncol=4)
    for a in axes:
        if warmup_s > 0:
            a.axvspan(-warmup_s, 0, color=WARMUP_COLOR, alpha=0.25, linewidth=0)
        _style(a)
    if warmup_s > 0:
        axes[0].text(-warmup_s, 0, " warm-up", fontsize=7, va="bottom", color="#8a5a00")
    axes[-1].set_xlabel("seconds (0 = start of the measured window)")
    return fig


def overlay_chart(
    series: dict[str, tuple[Sequence[float], Sequence[float | None]]], warmup_s: float = 0.0
) -> Figure:
    """Per-second TPS of several runs on one time axis."""
    fig = Figure(figsize=(8.5, 3.8), layout="constrained")
    ax = fig.add_subplot()
    for label, (t, y) in series.items():
        ax.plot(
            t, [v if v is not None else math.nan for v in y], linewidth=1, label=_label(label, 40)
        )
    if warmup_s > 0:
        ax.axvspan(-warmup_s, 0, color=WARMUP_COLOR, alpha=0.25, linewidth=0)
    ax.set_xlabel("seconds (0 = start of the measured window)")
    ax.set_ylabel("TPS")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    _style(ax)
    return fig
