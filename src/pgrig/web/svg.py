"""Charts as inline SVG, drawn on the server: no JavaScript, no CDN, nothing to load at run time.

Why server-side SVG rather than a vendored JS library: pages render offline and print, a test
can check a chart without a browser, and the Content-Security-Policy can forbid scripts outright.
Every piece of text that reaches the SVG goes through `markupsafe.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from markupsafe import Markup, escape

# Tableau 10: distinguishable, colour-blind friendlier than the defaults of most libraries.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
MAX_POINTS = 1200  # per line; longer series keep each bucket's min and max (spikes survive)
_CHAR_W = 7.0  # rough width of one 11px sans-serif character, for legend layout


@dataclass
class Line:
    """One line of a chart. None values leave a gap."""

    label: str
    x: Sequence[float | None]
    y: Sequence[float | None]
    color: str | None = None
    dashed: bool = False
    markers: bool = False  # draw a dot per point with a hover tooltip (for short series)
    line: bool = True  # False: dots only (a scatter, e.g. the repeats of a study point)
    legend: bool = True


@dataclass
class Chart:
    """What to draw; `render` turns it into SVG markup."""

    title: str
    lines: list[Line]
    x_label: str = ""
    y_label: str = ""
    y_unit: str = ""  # "B", "B/s", "%", "ms", ... chooses the tick format
    shade_until: float | None = None  # shade x < shade_until (the warm-up, t < 0)
    shade_label: str = "warm-up"
    y_from_zero: bool = True
    x_categories: list[str] | None = None  # category labels for x = 0, 1, 2, ...
    x_ticks: list[float] | None = None  # ticks at these x values (e.g. the swept clients)
    width: int = 640
    height: int = 250
    notes: list[str] = field(default_factory=list)


def render(chart: Chart) -> Markup:
    """The chart as an <svg> element sized by its container (viewBox, width 100%)."""
    arrays = {id(ln): _arrays(ln) for ln in chart.lines}
    lines = [ln for ln in chart.lines if arrays[id(ln)][2].any()]
    w, h = chart.width, chart.height
    keyed = [i for i, ln in enumerate(lines) if ln.legend]
    legend_rows = _legend_layout([lines[i].label for i in keyed], w - 70) if len(lines) > 1 else []
    top = 26 + 16 * len(legend_rows)
    left, right, bottom = 58, 14, 36 if chart.x_label else 24
    pw, ph = w - left - right, h - top - bottom
    out: list[str] = [
        f'<svg class="chart" viewBox="0 0 {w} {h}" role="img" '
        f'xmlns="http://www.w3.org/2000/svg" preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(chart.title)}</title>",
        f'<text class="ct" x="{left}" y="16">{escape(chart.title)}</text>',
    ]
    if not lines:
        out.append(
            f'<text class="empty" x="{w / 2:.0f}" y="{h / 2:.0f}" text-anchor="middle">'
            "no data</text></svg>"
        )
        return Markup("".join(out))

    xs = np.concatenate([arrays[id(ln)][0][arrays[id(ln)][2]] for ln in lines])
    ys = np.concatenate([arrays[id(ln)][1][arrays[id(ln)][2]] for ln in lines])
    x0, x1 = float(xs.min()), float(xs.max())
    if chart.shade_until is not None and x0 < chart.shade_until:
        x1 = max(x1, chart.shade_until)
    if chart.x_categories is not None:
        x0, x1 = -0.5, len(chart.x_categories) - 0.5
        xticks: list[float] = list(range(len(chart.x_categories)))
    elif chart.x_ticks:
        xticks = sorted(chart.x_ticks)
        x0, x1 = min(x0, xticks[0]), max(x1, xticks[-1])
        if x0 == x1:
            x0, x1 = x0 - 1, x1 + 1
    else:
        xticks, x0, x1 = _nice_ticks(x0, x1, max(2, pw // 80), snap=False)
    y0, y1 = float(ys.min()), float(ys.max())
    if chart.y_from_zero:
        y0 = min(0.0, y0)
    # Byte axes tick at round numbers of the binary unit shown (1, 2, 4 GiB; not 4.66 GiB).
    scale = _byte_factor(max(abs(y0), abs(y1))) if chart.y_unit.startswith("B") else 1.0
    yticks, y0, y1 = _nice_ticks(y0 / scale, y1 / scale, max(2, ph // 40))
    yticks, y0, y1 = [t * scale for t in yticks], y0 * scale, y1 * scale

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    out.append(f'<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}"/>')
    if chart.shade_until is not None and x0 < chart.shade_until:
        sx1 = sx(min(chart.shade_until, x1))
        out.append(
            f'<rect class="shade" x="{left}" y="{top}" width="{sx1 - left:.1f}" height="{ph}">'
            f"<title>{escape(chart.shade_label)}</title></rect>"
            f'<text class="shade-label" x="{left + 4}" y="{top + 12}">'
            f"{escape(chart.shade_label)}</text>"
        )
    yfmt = tick_formatter(chart.y_unit, yticks)
    for t in yticks:
        y = sy(t)
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(
            f'<text class="tick" x="{left - 5}" y="{y + 3.5:.1f}" text-anchor="end">'
            f"{escape(yfmt(t))}</text>"
        )
    clip = 18
    if chart.x_categories is not None:
        step = max(1, math.ceil(len(xticks) * 60 / pw))
        labels = [(t, chart.x_categories[int(t)]) for t in xticks[::step]]
        clip = max(8, int(pw / len(labels) / _CHAR_W * 1.1))
    else:
        xfmt = tick_formatter("", xticks)
        labels = [(t, xfmt(t)) for t in xticks]
    for t, label in labels:
        x = sx(t)
        out.append(
            f'<line class="tickmark" x1="{x:.1f}" x2="{x:.1f}" y1="{top + ph}" '
            f'y2="{top + ph + 4}"/>'
        )
        out.append(
            f'<text class="tick" x="{x:.1f}" y="{top + ph + 15}" text-anchor="middle">'
            f"{escape(_clip(label, clip))}</text>"
        )
    if chart.x_label:
        out.append(
            f'<text class="axis" x="{left + pw / 2:.0f}" y="{h - 4}" text-anchor="middle">'
            f"{escape(chart.x_label)}</text>"
        )
    if chart.y_label:
        out.append(
            f'<text class="axis" transform="translate(12 {top + ph / 2:.0f}) rotate(-90)" '
            f'text-anchor="middle">{escape(chart.y_label)}</text>'
        )
    for i, ln in enumerate(lines):
        color = ln.color or PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="5 3"' if ln.dashed else ""
        xa, ya, ok = arrays[id(ln)]
        for sxs, sys_ in _segments(xa, ya, ok) if ln.line else []:
            dx, dy = _decimate_arrays(sxs, sys_)
            px = (left + (dx - x0) / (x1 - x0) * pw).tolist()
            py = (top + ph - (dy - y0) / (y1 - y0) * ph).tolist()
            pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py, strict=True))
            out.append(
                f'<polyline class="line" points="{pts}" stroke="{color}"{dash}>'
                f"<title>{escape(ln.label)}</title></polyline>"
            )
        if ln.markers:
            for x, y in zip(xa[ok].tolist(), ya[ok].tolist(), strict=True):
                xl = chart.x_categories[int(x)] if chart.x_categories is not None else _num(x)
                tip = f"{ln.label}: {xl} → {_num(y)}{' ' + chart.y_unit if chart.y_unit else ''}"
                out.append(
                    f'<circle class="dot" cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.2" '
                    f'fill="{color}"><title>{escape(tip)}</title></circle>'
                )
    for row_no, row in enumerate(legend_rows):
        y = 30 + 16 * row_no
        for label, offset, k in row:
            i = keyed[k]
            color = lines[i].color or PALETTE[i % len(PALETTE)]
            x = left + offset
            out.append(
                f'<rect x="{x:.0f}" y="{y - 8}" width="12" height="4" fill="{color}"/>'
                f'<text class="legend" x="{x + 16:.0f}" y="{y - 3}">{escape(label)}</text>'
            )
    out.extend(
        f'<text class="note" x="{left + pw - 4}" y="{top + 12 + 12 * k}" text-anchor="end">'
        f"{escape(n)}</text>"
        for k, n in enumerate(chart.notes)
    )
    out.append("</svg>")
    return Markup("".join(out))


# --- helpers ---------------------------------------------------------------------------------


def _floats(seq: Sequence[float | None]) -> np.ndarray:
    """A float array with NaN for None (and for anything that is not a number)."""
    try:
        return np.asarray(seq, dtype=float)
    except (TypeError, ValueError):
        return np.array(
            [v if isinstance(v, int | float) and not isinstance(v, bool) else np.nan for v in seq],
            dtype=float,
        )


def _arrays(ln: Line) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x, y as float arrays of equal length, and the mask of points that can be drawn."""
    n = min(len(ln.x), len(ln.y))
    xa, ya = _floats(list(ln.x[:n])), _floats(list(ln.y[:n]))
    return xa, ya, np.isfinite(xa) & np.isfinite(ya)


def _segments(
    xa: np.ndarray, ya: np.ndarray, ok: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Runs of consecutive drawable points: a None (NaN) breaks the line."""
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1) + 1
    return [(xa[part], ya[part]) for part in np.split(idx, breaks)]


def _decimate_arrays(
    xa: np.ndarray, ya: np.ndarray, limit: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """At most ~limit points: per bucket the min and the max, in x order (keeps the spikes)."""
    n = xa.size
    if n <= limit:
        return xa, ya
    per = math.ceil(n / (limit // 2))
    rows = math.ceil(n / per)
    padded = np.concatenate([ya, np.full(rows * per - n, np.nan)]).reshape(rows, per)
    base = np.arange(rows) * per  # every row holds at least one real value: no all-NaN row
    lo = np.nanargmin(padded, axis=1) + base
    hi = np.nanargmax(padded, axis=1) + base
    k = np.unique(np.concatenate([lo, hi]))  # sorted: x order kept
    return xa[k], ya[k]


def _decimate(pts: list[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    """_decimate_arrays for a list of (x, y) points."""
    if not pts:
        return []
    xa, ya = np.array(pts, dtype=float).T
    dx, dy = _decimate_arrays(xa, ya, limit)
    return list(zip(dx.tolist(), dy.tolist(), strict=True))


def _nice_step(span: float, count: int) -> float:
    raw = span / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _nice_ticks(
    lo: float, hi: float, count: int, snap: bool = True
) -> tuple[list[float], float, float]:
    """Round tick values covering [lo, hi]; with snap the range widens to whole ticks."""
    if hi == lo:
        pad = abs(hi) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    step = _nice_step(hi - lo, count)
    first = math.floor(lo / step) * step if snap else math.ceil(lo / step - 1e-9) * step
    last = math.ceil(hi / step) * step if snap else hi
    ticks: list[float] = []
    t = first
    while t <= last + step * 1e-6 and len(ticks) < 50:
        ticks.append(round(t, 12))
        t += step
    return ticks, (first if snap else lo), (last if snap else hi)


_BIN = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def _byte_factor(top: float) -> float:
    return next((f for _, f in _BIN if top >= f), 1.0)


_SI = (("G", 1e9), ("M", 1e6), ("k", 1e3))


def tick_formatter(unit: str, ticks: Sequence[float]) -> Callable[[float], str]:
    """A formatter for axis ticks: binary prefixes for bytes, SI for big counts."""
    top = max((abs(t) for t in ticks), default=0.0)
    if unit.startswith("B"):
        suffix = unit[1:]
        for name, factor in _BIN:
            if top >= factor:
                return lambda v, f=factor, n=name: f"{_num(v / f)} {n}{suffix}" if v else "0"
        return lambda v: f"{_num(v)} B{suffix}"
    for name, factor in _SI:
        if top >= factor * 10:
            return lambda v, f=factor, n=name: f"{_num(v / f)}{n}" if v else "0"
    return _num


def _num(v: float) -> str:
    """Short, exact-enough number: 12, 1.5, 0.25, 12,345."""
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}".rstrip("0").rstrip(".")
    if a >= 0.01:
        return f"{v:.2f}".rstrip("0").rstrip(".")
    return f"{v:.2g}"


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _legend_layout(labels: list[str], width: float) -> list[list[tuple[str, float, int]]]:
    """Place legend entries left to right, wrapping into rows (at most 4 rows, then '…')."""
    rows: list[list[tuple[str, float, int]]] = [[]]
    x = 0.0
    for i, label in enumerate(labels):
        label = _clip(label, 40)
        item_w = 28 + _CHAR_W * len(label)
        if x + item_w > width and rows[-1]:
            if len(rows) == 4:
                break
            rows.append([])
            x = 0.0
        rows[-1].append((label, x, i))
        x += item_w
    return rows
