"""The axes of the chart engine (svg.py): where ticks go (nice steps, whole seconds and minutes,
decades on a log scale) and how a value reads on an axis or in a tooltip (durations, bytes in
binary units, percentages, rates)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pgrig.format import duration as fmt_duration


def _nice_step(span: float, count: int) -> float:
    raw = span / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def nice_ticks(
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


_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600)


def time_ticks(lo: float, hi: float, count: int) -> list[float]:
    """Ticks at round durations: every 10 s, 5 min, 1 h ..."""
    step = next((s for s in _TIME_STEPS if (hi - lo) / s <= count), 43200)
    first = math.ceil(lo / step) * step
    return [float(first + k * step) for k in range(int((hi - first) // step) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0**e for m in (1, 2, 5) if lo <= m * 10.0**e <= hi]
    return out


def duration(v: float) -> str:
    """Seconds on a time axis: format.duration's words ("45s", "1m 30s", "1h"), 0 as "0"."""
    return "0" if v == 0 else fmt_duration(v)


_BIN = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def byte_factor(top: float) -> float:
    return next((f for _, f in _BIN if top >= f), 1.0)


_SI = (("G", 1e9), ("M", 1e6), ("k", 1e3))


def tick_formatter(unit: str, ticks: Sequence[float]) -> Callable[[float], str]:
    """A formatter for axis ticks: binary prefixes for bytes, % for shares, SI for big counts."""
    top = max((abs(t) for t in ticks), default=0.0)
    factor, text = 1.0, ""
    if unit.startswith("B"):
        factor, name = next(((float(f), n) for n, f in _BIN if top >= f), (1.0, "B"))
        text = f" {name}{unit[1:]}"
    elif unit == "%":
        text = "%"
    else:
        factor, text = next(((f, n) for n, f in _SI if top >= f * 10), (1.0, ""))

    def fmt(v: float) -> str:
        return f"{number(v / factor)}{text}" if v else "0"

    return fmt


def format_value(v: float, unit: str) -> str:
    """One value with its unit, for tooltips: 4.66 GiB, 55.3%, 31.2 ms, 12,778/s."""
    if unit.startswith("B"):
        factor = byte_factor(abs(v))
        name = next((n for n, f in _BIN if f == factor), "B")
        return f"{number(v / factor)} {name}{unit[1:]}"
    if unit == "%":
        return f"{number(v)}%"
    if unit == "1/s":
        return f"{number(v)}/s"
    return f"{number(v)} {unit}" if unit else number(v)


def number(v: float) -> str:
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
