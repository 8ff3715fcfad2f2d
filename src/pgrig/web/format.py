"""Number, size, time and duration formatting for pages (registered as Jinja filters)."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from pgrig import units

ENGINE_NAMES = {"postgresql": "PostgreSQL"}


def num(v: Any, digits: int = 1) -> str:
    """Thousands separators, `digits` decimals for small values; '–' for missing."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        if abs(v) >= 100:
            return f"{v:,.{max(0, digits - 1)}f}" if digits > 1 else f"{v:,.0f}"
        if abs(v) < 0.1 and v != 0:
            return f"{v:.2g}"
        return f"{v:,.{digits}f}"
    return str(v)


def ms(v: float | None) -> str:
    """A latency in milliseconds with 3 significant-ish digits."""
    if v is None:
        return "–"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def pct(v: float | None, digits: int = 1) -> str:
    return "–" if v is None else f"{v:.{digits}f}%"


def signed_pct(ratio: float | None) -> str:
    """+12.3% for a ratio of 1.123."""
    if ratio is None or not math.isfinite(ratio):
        return "–"
    return f"{(ratio - 1) * 100:+.1f}%"


def size(v: int | float | None) -> str:
    """Bytes with binary prefixes: 1.5 GiB."""
    if v is None:
        return "–"
    n = float(v)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def duration(seconds: float | None) -> str:
    """90 → '1m 30s', 7200 → '2h'."""
    if seconds is None:
        return "–"
    s = float(seconds)
    if s < 60:
        return f"{s:g}s" if s == int(s) else f"{s:.1f}s"
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{sec}s" if sec else ""]
    return " ".join(p for p in parts if p)


def when(dt: datetime | None) -> str:
    """UTC, to the minute: the archive may be shared across time zones."""
    if dt is None:
        return "–"
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def when_full(dt: datetime | None) -> str:
    if dt is None:
        return "–"
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


_VERSION_RE = re.compile(r"\d+(?:\.\d+)*(?:devel|beta\d*|rc\d*)?")


def engine(name: str | None, version: str | None) -> str:
    """'PostgreSQL 15.18', also from version() strings ('PostgreSQL 15.18 (Debian ...) on ...')."""
    label = ENGINE_NAMES.get(name or "", name or "")
    if not version:
        return label
    m = _VERSION_RE.search(version)
    return f"{label} {m.group(0) if m else version}".strip()


def setting_value(s: dict[str, Any] | None, name: str = "", key: str = "setting") -> str:
    """A settings snapshot entry as PostgreSQL's SHOW prints it (pgrig/units.py): 128MB."""
    if not s or s.get(key) is None:
        return "–"
    return units.setting_text(s, name, key)


FILTERS = {
    "num": num,
    "ms": ms,
    "pct": pct,
    "signed_pct": signed_pct,
    "size": size,
    "duration": duration,
    "when": when,
    "when_full": when_full,
    "setting_value": setting_value,
}
