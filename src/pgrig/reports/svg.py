"""The chart engine: a `Chart` says what to draw, `render` draws it as SVG. Every chart of pgrig
goes through here: web pages and the self-contained HTML report inline the SVG, Markdown reports
write it as `.svg` files next to the text (`document`).

Why SVG drawn here rather than matplotlib or a JavaScript library: pages need no script (the
Content-Security-Policy forbids scripts), nothing is loaded at run time, a test can read a chart
as text, and the output is deterministic (same data, same bytes). Styling uses presentation
attributes only, no <style> and no style="": they pass the CSP (style-src 'self'), an <img> tag
and a viewer opening the .svg file alone. Every piece of text goes through `_text` (escaped, no
control characters, which XML forbids).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, cast, overload

import numpy as np
from markupsafe import Markup, escape

from pgrig.reports.chart_axes import (
    byte_factor,
    duration,
    format_value,
    log_ticks,
    nice_ticks,
    number,
    tick_formatter,
    time_ticks,
)

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
FONT = "system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', Arial, sans-serif"
INK, MUTED, FAINT = "#1f2d3d", "#5b6675", "#7b8595"
GRID, BORDER, SHADE = "#edf0f4", "#c9d0da", "#e9ecf1"
DASHES = {"solid": "", "dashed": "6 3", "dotted": "1.5 2.5"}
MAX_MARKERS = 400  # a dot per point only for short series; long ones are lines
_CHAR_W = 6.3  # rough width of one 11px sans-serif character, for layout
_CONTROL = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)

Dash = Literal["solid", "dashed", "dotted"]


@dataclass
class Trace:
    """One data series of a chart. None (or NaN) leaves a gap: never drawn as zero.

    kind "line" joins the points (decimated to the pixel columns when long), "points" draws a
    dot per point, "bars" a bar from zero. `lower`/`upper` are bounds per point: whiskers, or a
    shaded band with `band`.
    """

    label: str
    x: Sequence[float | None]
    y: Sequence[float | None]
    lower: Sequence[float | None] | None = None
    upper: Sequence[float | None] | None = None
    kind: Literal["line", "points", "bars"] = "line"
    color: str | None = None
    dash: Dash = "solid"
    markers: bool = False  # on a line: a dot per point with a tooltip (short series only)
    band: bool = False
    legend: bool = True


@dataclass(frozen=True)
class Reference:
    """A horizontal reference: a dashed line at y, labelled, and a shaded band when bounded."""

    y: float
    label: str
    lower: float | None = None
    upper: float | None = None


@dataclass(frozen=True)
class LegendKey:
    label: str
    color: str
    dash: Dash = "solid"
    kind: Literal["line", "points", "bars"] = "line"


@dataclass
class Chart:
    """What to draw; `render` turns it into SVG markup."""

    title: str
    traces: list[Trace]
    x_label: str = ""
    y_label: str = ""
    y_unit: str = ""  # "B", "B/s", "%", "ms", "1/s": the tick and tooltip format
    x_unit: str = ""  # "s": time ticks (30s, 5m, 1h)
    shade_until: float | None = None  # shade x < shade_until (the warm-up, t < 0)
    shade_label: str = "warm-up"
    y_from_zero: bool = True
    x_categories: list[str] | None = None  # category labels for x = 0, 1, 2, ...
    x_ticks: list[float] | None = None  # ticks at these x values (e.g. the swept clients)
    x_log: bool = False
    references: list[Reference] = field(default_factory=list)
    legend: list[LegendKey] | None = None  # None: a key per trace when there are several
    width: int = 640
    height: int = 250
    notes: list[str] = field(default_factory=list)


def render(chart: Chart) -> Markup:
    """The chart as an <svg> element (sized by its viewBox; CSS may scale it)."""
    return Markup(_Drawing(chart).svg())


def document(chart: Chart) -> str:
    """The chart as a standalone .svg file."""
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{_Drawing(chart).svg()}\n'


# --- drawing ---------------------------------------------------------------------------------


@dataclass
class _Data:
    """A trace as float arrays (NaN for None) and the mask of the points that can be drawn."""

    trace: Trace
    color: str
    x: np.ndarray
    y: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    ok: np.ndarray

    @classmethod
    def of(cls, trace: Trace, color: str, log_x: bool) -> _Data:
        n = min(len(trace.x), len(trace.y))
        x, y = _floats(trace.x, n), _floats(trace.y, n)
        lo = _floats(trace.lower, n) if trace.lower is not None else np.full(n, np.nan)
        hi = _floats(trace.upper, n) if trace.upper is not None else np.full(n, np.nan)
        ok = np.isfinite(x) & np.isfinite(y)
        if log_x:
            ok &= x > 0
        return cls(trace, color, x, y, lo, hi, ok)

    def bounded(self) -> np.ndarray:
        return cast(np.ndarray, self.ok & np.isfinite(self.lo) & np.isfinite(self.hi))


class _Drawing:
    """Layout (margins, scales, ticks) of one chart, then its SVG elements in paint order."""

    right = 14

    def __init__(self, chart: Chart) -> None:
        self.c = chart
        traces = [
            _Data.of(t, t.color or PALETTE[i % len(PALETTE)], chart.x_log)
            for i, t in enumerate(chart.traces)
        ]
        self.data = [d for d in traces if d.ok.any()]
        self.keys = self._legend_keys()
        self.legend_rows, self.legend_hidden = _legend_layout(
            [k.label for k in self.keys], chart.width - 2 * 14
        )
        self.top = 26 + 16 * len(self.legend_rows) + (4 if self.legend_rows else 0)
        self.w, self.h = chart.width, chart.height
        self.rotate = False  # categorical labels too long to sit side by side
        if self.data:
            self._scales()

    # -- layout --
    def _legend_keys(self) -> list[LegendKey]:
        if self.c.legend is not None:
            return self.c.legend
        keyed = [d for d in self.data if d.trace.legend]
        if len(keyed) < 2 and not self.c.references:
            return []
        return [LegendKey(d.trace.label, d.color, d.trace.dash, d.trace.kind) for d in keyed]

    def _scales(self) -> None:
        c = self.c
        x0, x1 = self._x_range()
        self.bottom = 24 + (14 if c.x_label else 0)
        self.cat_labels, rotate_extra = self._category_labels(c.width - 70)
        self.bottom += rotate_extra
        self.h = c.height + rotate_extra  # rotated labels add height, the plot keeps its own
        self.ph = self.h - self.top - self.bottom
        y0, y1 = self._y_range()
        scale = byte_factor(max(abs(y0), abs(y1))) if c.y_unit.startswith("B") else 1.0
        yt, y0, y1 = nice_ticks(y0 / scale, y1 / scale, max(2, self.ph // 40))
        self.yticks, self.y0, self.y1 = [t * scale for t in yt], y0 * scale, y1 * scale
        yfmt = tick_formatter(c.y_unit, self.yticks)
        self.ytick_text = [yfmt(t) for t in self.yticks]
        widest = max(len(s) for s in self.ytick_text)
        self.left = int(12 + _CHAR_W * widest + (18 if c.y_label else 0))
        if self.cat_labels and rotate_extra:  # the first rotated label reaches to the left
            first = len(self.cat_labels[0][1]) * _CHAR_W * 0.82
            self.left = max(self.left, min(160, int(first - self._cat_px(c.width - 70) / 2 + 8)))
        self.pw = self.w - self.left - self.right
        self.x0, self.x1 = x0, x1
        self.xticks = self._x_ticks()

    def _x_range(self) -> tuple[float, float]:
        c = self.c
        if c.x_categories is not None:
            return -0.5, len(c.x_categories) - 0.5
        xs = np.concatenate([d.x[d.ok] for d in self.data])
        x0, x1 = float(xs.min()), float(xs.max())
        if c.x_ticks:
            ticks = [t for t in c.x_ticks if t > 0 or not c.x_log]
            x0, x1 = min([x0, *ticks]), max([x1, *ticks])
        if c.shade_until is not None and x0 < c.shade_until:
            x1 = max(x1, c.shade_until)
        if c.x_log:
            lx0, lx1 = math.log10(x0), math.log10(x1)
            pad = max(0.04 * (lx1 - lx0), 0.05)
            return 10 ** (lx0 - pad), 10 ** (lx1 + pad)
        if x0 == x1:
            return x0 - 1, x1 + 1
        if any(d.trace.kind != "line" or d.trace.markers for d in self.data):
            pad = 0.03 * (x1 - x0)  # dots at the ends stay whole
            return x0 - pad, x1 + pad
        return x0, x1

    def _y_range(self) -> tuple[float, float]:
        parts = []
        for d in self.data:
            parts += [d.y[d.ok], d.lo[d.ok & np.isfinite(d.lo)], d.hi[d.ok & np.isfinite(d.hi)]]
        for r in self.c.references:
            parts.append(np.array([v for v in (r.y, r.lower, r.upper) if v is not None]))
        ys = np.concatenate(parts)
        y0, y1 = float(ys.min()), float(ys.max())
        if self.c.y_from_zero or any(d.trace.kind == "bars" for d in self.data):
            y0 = min(0.0, y0)
        return y0, y1

    def _cat_px(self, pw: float) -> float:
        return pw / max(1, len(self.c.x_categories or ()))

    def _category_labels(self, pw: float) -> tuple[list[tuple[float, str]], int]:
        """Labels of categorical ticks, and the extra height when they must be rotated."""
        cats = self.c.x_categories
        if cats is None:
            return [], 0
        step = max(1, math.ceil(len(cats) * 16 / pw))  # at most one label per 16 px
        labels = [(float(i), _clip(cats[i], 28)) for i in range(0, len(cats), step)]
        per = self._cat_px(pw) * step
        longest = max((len(s) for _, s in labels), default=0)
        if longest * _CHAR_W <= per - 6:
            return labels, 0
        labels = [(x, _clip(s, 24)) for x, s in labels]
        longest = max(len(s) for _, s in labels)
        self.rotate = True
        return labels, int(longest * _CHAR_W * 0.58)  # sin(35°) of the longest label

    def _x_ticks(self) -> list[float]:
        c = self.c
        if c.x_categories is not None:
            return [x for x, _ in self.cat_labels]
        if c.x_ticks:
            return sorted(t for t in c.x_ticks if self.x0 <= t <= self.x1)
        count = max(2, self.pw // 80)
        if c.x_log:
            return log_ticks(self.x0, self.x1)
        ticks = time_ticks(self.x0, self.x1, count) if c.x_unit == "s" else []
        return ticks if len(ticks) >= 2 else nice_ticks(self.x0, self.x1, count, snap=False)[0]

    # -- scales --
    @overload
    def sx(self, x: float) -> float: ...
    @overload
    def sx(self, x: np.ndarray) -> np.ndarray: ...
    def sx(self, x: np.ndarray | float) -> np.ndarray | float:
        if self.c.x_log:
            lo, hi = math.log10(self.x0), math.log10(self.x1)
            return self.left + (np.log10(x) - lo) / (hi - lo) * self.pw
        return self.left + (x - self.x0) / (self.x1 - self.x0) * self.pw

    @overload
    def sy(self, y: float) -> float: ...
    @overload
    def sy(self, y: np.ndarray) -> np.ndarray: ...
    def sy(self, y: np.ndarray | float) -> np.ndarray | float:
        return self.top + self.ph - (y - self.y0) / (self.y1 - self.y0) * self.ph

    # -- output --
    def svg(self) -> str:
        c = self.c
        out = [
            f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.w} '
            f'{self.h}" width="{self.w}" height="{self.h}" role="img" font-family="{FONT}" '
            f'font-size="11">',
            f"<title>{_text(c.title)}</title>",
            f'<text class="ct" x="14" y="17" font-size="13" font-weight="600" fill="{INK}">'
            f"{_text(c.title)}</text>",
        ]
        if not self.data:
            out.append(
                f'<text class="empty" x="{self.w / 2:.0f}" y="{self.h / 2:.0f}" '
                f'text-anchor="middle" font-size="13" fill="{MUTED}">no data</text></svg>'
            )
            return "".join(out)
        out += self._frame()
        for paint in (self._bands, self._bars, self._lines, self._whiskers, self._dots):
            for d in self.data:
                out += paint(d)
        out += self._references()
        out += self._legend()
        out += self._notes()
        out.append("</svg>")
        return "".join(out)

    def _frame(self) -> list[str]:
        c, left, top, pw, ph = self.c, self.left, self.top, self.pw, self.ph
        out = [
            f'<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#fff" '
            f'stroke="{BORDER}"/>'
        ]
        if c.shade_until is not None and self.x0 < c.shade_until:
            end = float(self.sx(min(c.shade_until, self.x1)))
            out.append(
                f'<rect class="shade" x="{left + 0.5}" y="{top + 0.5}" width="'
                f'{max(0.0, end - left - 0.5):.1f}" height="{ph - 1}" fill="{SHADE}">'
                f"<title>{_text(c.shade_label)}</title></rect>"
                f'<text class="shade-label" x="{left + 4}" y="{top + 12}" font-size="10.5" '
                f'fill="{FAINT}">{_text(c.shade_label)}</text>'
            )
        for r in c.references:
            if r.lower is not None and r.upper is not None:
                y_hi, y_lo = float(self.sy(r.upper)), float(self.sy(r.lower))
                out.append(
                    f'<rect class="ref-band" x="{left}" y="{y_hi:.1f}" width="{pw}" '
                    f'height="{y_lo - y_hi:.1f}" fill="{PALETTE[0]}" fill-opacity="0.12">'
                    f"<title>{_text(r.label)}</title></rect>"
                )
        out.append(f'<g class="grid" stroke="{GRID}">')
        out += [
            f'<line x1="{left}" x2="{left + pw}" y1="{self.sy(t):.1f}" y2="{self.sy(t):.1f}"/>'
            for t in self.yticks
        ]
        out.append(f'</g><g class="tick" font-size="10.5" fill="{MUTED}" text-anchor="end">')
        out += [
            f'<text x="{left - 5}" y="{float(self.sy(t)) + 3.5:.1f}">{_text(s)}</text>'
            for t, s in zip(self.yticks, self.ytick_text, strict=True)
        ]
        out.append("</g>")
        out += self._x_axis()
        if c.y_label:
            out.append(
                f'<text class="axis" transform="translate(12 {top + ph / 2:.0f}) rotate(-90)" '
                f'text-anchor="middle" fill="{MUTED}">{_text(c.y_label)}</text>'
            )
        return out

    def _x_axis(self) -> list[str]:
        c, base = self.c, self.top + self.ph
        if c.x_categories is not None:
            labels = self.cat_labels
        else:
            fmt = duration if c.x_unit == "s" else tick_formatter("", self.xticks)
            labels = [(t, fmt(t)) for t in self.xticks]
        rotate = self.rotate
        anchor = "end" if rotate else "middle"
        out = [f'<g class="tick" font-size="10.5" fill="{MUTED}" text-anchor="{anchor}">']
        for t, label in labels:
            x = float(self.sx(t))
            out.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{base}" y2="{base + 4}" stroke="#9aa5b3"/>'
            )
            if rotate:
                out.append(
                    f'<text transform="translate({x + 3:.1f} {base + 12}) rotate(-35)">'
                    f"{_text(label)}</text>"
                )
            else:
                out.append(f'<text x="{x:.1f}" y="{base + 15}">{_text(label)}</text>')
        out.append("</g>")
        if c.x_label:
            out.append(
                f'<text class="axis" x="{self.left + self.pw / 2:.0f}" y="{self.h - 4}" '
                f'text-anchor="middle" fill="{MUTED}">{_text(c.x_label)}</text>'
            )
        return out

    def _bands(self, d: _Data) -> list[str]:
        if not d.trace.band:
            return []
        out = []
        for idx in _runs(d.bounded()):
            if idx.size < 2:
                continue
            xs = self.sx(d.x[idx])
            upper = _points(xs, self.sy(d.hi[idx]))
            lower = _points(xs[::-1], self.sy(d.lo[idx][::-1]))
            out.append(
                f'<polygon class="band" points="{upper} {lower}" fill="{d.color}" '
                f'fill-opacity="0.18"><title>{_text(d.trace.label)} bounds</title></polygon>'
            )
        return out

    def _bars(self, d: _Data) -> list[str]:
        if d.trace.kind != "bars":
            return []
        xs = np.unique(np.concatenate([e.x[e.ok] for e in self.data if e.trace.kind == "bars"]))
        gap = float(np.diff(self.sx(xs)).min()) if xs.size > 1 else self.pw / 2
        width = min(60.0, 0.6 * gap)
        base = float(self.sy(max(self.y0, 0.0)))
        out = [f'<g class="bars" fill="{d.color}" fill-opacity="0.7">']
        for x, y, lo, hi in self._rows(d):
            top, left = float(self.sy(y)), float(self.sx(x)) - width / 2
            out.append(
                f'<rect class="bar" x="{left:.1f}" y="{min(top, base):.1f}" width="{width:.1f}" '
                f'height="{abs(base - top):.1f}">'
                f"<title>{_text(self._tip(d, x, y, lo, hi))}</title></rect>"
            )
        out.append("</g>")
        return out

    def _lines(self, d: _Data) -> list[str]:
        if d.trace.kind != "line":
            return []
        dash = DASHES[d.trace.dash]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out = []
        for idx in _runs(d.ok):
            xs, ys = decimate(d.x[idx], d.y[idx], self._column_of)
            out.append(
                f'<polyline class="line" points="{_points(self.sx(xs), self.sy(ys))}" '
                f'fill="none" stroke="{d.color}" stroke-width="1.6" stroke-linejoin="round"'
                f"{dash_attr}><title>{_text(d.trace.label)}</title></polyline>"
            )
        return out

    def _column_of(self, xs: np.ndarray) -> np.ndarray:
        """The pixel column of each x: decimation keeps what one column can show."""
        return cast(np.ndarray, np.floor(np.asarray(self.sx(xs), dtype=float)).astype(np.int64))

    def _whiskers(self, d: _Data) -> list[str]:
        bounded = d.bounded()
        if d.trace.band or not bounded.any():
            return []
        color = INK if d.trace.kind == "bars" else d.color
        parts = []
        for x, lo, hi in zip(d.x[bounded], d.lo[bounded], d.hi[bounded], strict=True):
            px, y1, y2 = float(self.sx(x)), float(self.sy(lo)), float(self.sy(hi))
            parts.append(
                f"M{px:.1f} {y1:.1f}V{y2:.1f}M{px - 4:.1f} {y1:.1f}h8M{px - 4:.1f} {y2:.1f}h8"
            )
        return [
            f'<path class="whiskers" d="{"".join(parts)}" fill="none" stroke="{color}" '
            f'stroke-width="1.3"><title>{_text(d.trace.label)} bounds</title></path>'
        ]

    def _dots(self, d: _Data) -> list[str]:
        wanted = d.trace.kind == "points" or (d.trace.kind == "line" and d.trace.markers)
        if not wanted or int(d.ok.sum()) > MAX_MARKERS:
            return []
        r = "3" if d.trace.kind == "points" else "3.2"
        out = [f'<g class="dots" fill="{d.color}" stroke="#fff" stroke-width="1">']
        for x, y, lo, hi in self._rows(d):
            out.append(
                f'<circle class="dot" cx="{float(self.sx(x)):.1f}" cy="{float(self.sy(y)):.1f}" '
                f'r="{r}"><title>{_text(self._tip(d, x, y, lo, hi))}</title></circle>'
            )
        out.append("</g>")
        return out

    @staticmethod
    def _rows(d: _Data) -> list[tuple[float, float, float, float]]:
        """(x, y, lower, upper) of each drawable point."""
        cols = (d.x[d.ok].tolist(), d.y[d.ok].tolist(), d.lo[d.ok].tolist(), d.hi[d.ok].tolist())
        return list(zip(*cols, strict=True))

    def _tip(self, d: _Data, x: float, y: float, lo: float, hi: float) -> str:
        c = self.c
        if c.x_categories is not None and 0 <= round(x) < len(c.x_categories):
            where = c.x_categories[round(x)]
        else:
            where = duration(x) if c.x_unit == "s" else number(x)
        tip = f"{d.trace.label}: {where} → {format_value(y, c.y_unit)}"
        if math.isfinite(lo) and math.isfinite(hi):
            tip += f" [{format_value(lo, c.y_unit)}, {format_value(hi, c.y_unit)}]"
        return tip

    def _references(self) -> list[str]:
        out = []
        for r in self.c.references:
            y = float(self.sy(r.y))
            out.append(
                f'<line class="ref" x1="{self.left}" x2="{self.left + self.pw}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="{INK}" stroke-width="1" stroke-dasharray="5 3" '
                f'stroke-opacity="0.7"><title>{_text(r.label)}</title></line>'
                f'<text class="ref-label" x="{self.left + self.pw - 4}" y="{y - 4:.1f}" '
                f'text-anchor="end" font-size="10.5" fill="{INK}" stroke="#fff" '
                f'stroke-width="3" paint-order="stroke">{_text(r.label)}</text>'
            )
        return out

    def _legend(self) -> list[str]:
        out = []
        for row_no, row in enumerate(self.legend_rows):
            y = 31 + 16 * row_no
            for label, offset, k in row:
                key, x = self.keys[k], 14 + offset
                out.append(_swatch(key, x, y - 4))
                out.append(
                    f'<text class="legend" x="{x + 19:.0f}" y="{y}" fill="#3a4452">'
                    f"{_text(label)}</text>"
                )
        if self.legend_hidden:
            label, offset, _ = self.legend_rows[-1][-1]
            x = 14 + offset + 30 + _CHAR_W * len(label)
            y = 31 + 16 * (len(self.legend_rows) - 1)
            out.append(
                f'<text class="legend-more" x="{x:.0f}" y="{y}" fill="{FAINT}">'
                f"+{self.legend_hidden} more</text>"
            )
        return out

    def _notes(self) -> list[str]:
        return [
            f'<text class="note" x="{self.left + self.pw - 4}" y="{self.top + 12 + 12 * k}" '
            f'text-anchor="end" font-size="10.5" fill="{FAINT}">{_text(n)}</text>'
            for k, n in enumerate(self.c.notes)
        ]


def _swatch(key: LegendKey, x: float, y: float) -> str:
    if key.kind == "points":
        return f'<circle cx="{x + 7:.0f}" cy="{y:.0f}" r="3.5" fill="{key.color}"/>'
    if key.kind == "bars":
        return (
            f'<rect x="{x + 2:.0f}" y="{y - 5:.0f}" width="10" height="10" fill="{key.color}" '
            'fill-opacity="0.7"/>'
        )
    dash = DASHES[key.dash]
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{x:.0f}" x2="{x + 15:.0f}" y1="{y:.0f}" y2="{y:.0f}" stroke="{key.color}" '
        f'stroke-width="2.2"{dash_attr}/>'
    )


# --- helpers ---------------------------------------------------------------------------------


def decimate(
    xa: np.ndarray, ya: np.ndarray, column_of: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The points worth drawing: per pixel column its lowest and highest point, in x order.

    A line through them looks the same as one through every point (a spike survives, however
    narrow), but costs at most two points per column whatever the run's length.
    """
    if xa.size <= 2:
        return xa, ya
    cols = column_of(xa)
    if xa.size <= 2 * (int(cols.max()) - int(cols.min()) + 1):
        return xa, ya  # no more than two points per column anyway
    order = np.lexsort((ya, cols))  # by column, then by value within the column
    starts = np.flatnonzero(np.r_[True, np.diff(cols[order]) != 0])
    ends = np.r_[starts[1:], order.size] - 1
    keep = np.zeros(xa.size, dtype=bool)
    keep[order[starts]] = keep[order[ends]] = True  # lowest and highest; index order = x order
    return xa[keep], ya[keep]


def _floats(seq: Sequence[float | None], n: int) -> np.ndarray:
    """The first n values as floats; NaN for None and for anything that is not a number."""
    try:
        return np.asarray(seq[:n], dtype=float)
    except (TypeError, ValueError):
        return np.fromiter(
            (
                v if isinstance(v, int | float) and not isinstance(v, bool) else math.nan
                for v in seq[:n]
            ),
            dtype=float,
            count=n,
        )


def _runs(mask: np.ndarray) -> list[np.ndarray]:
    """Indexes of each stretch of consecutive True values: a gap (None) breaks a line."""
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return []
    return np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1)


def _points(px: np.ndarray | float, py: np.ndarray | float) -> str:
    """Points as `x,y x,y ...` with one decimal (a tenth of a pixel is finer than a screen)."""
    xy = np.column_stack([np.atleast_1d(px), np.atleast_1d(py)]).ravel().tolist()
    return " ".join(["%.1f,%.1f"] * (len(xy) // 2)) % tuple(xy)


def _text(s: object) -> str:
    """User text made inert in SVG/HTML/XML: escaped, control characters replaced."""
    return str(escape(_CONTROL.sub("\ufffd", str(s))))


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


LEGEND_ROWS = 4
_MORE_W = 70  # room for "+12 more" after the last row


def _legend_layout(
    labels: list[str], width: float
) -> tuple[list[list[tuple[str, float, int]]], int]:
    """Legend entries placed left to right in rows of `width`, at most LEGEND_ROWS of them;
    returns the rows of (label, x offset, key index) and how many keys did not fit."""
    rows: list[list[tuple[str, float, int]]] = [[]]
    x = 0.0
    for i, label in enumerate(labels):
        label = _clip(label, 40)
        item_w = 30 + _CHAR_W * len(label)
        last_row = len(rows) == LEGEND_ROWS
        room = width - (_MORE_W if last_row and i < len(labels) - 1 else 0)
        if x + item_w > room and rows[-1]:
            if last_row:
                return rows, len(labels) - i
            rows.append([])
            x = 0.0
        rows[-1].append((label, x, i))
        x += item_w
    return (rows if rows[0] else []), 0
