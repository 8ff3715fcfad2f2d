"""How pgrig writes a value for people: one rule per kind, used by the CLI, the web and reports.

- missing values: "-" (None, NaN, infinities);
- numbers: thousands separators; whole from 1,000 up, else `digits` decimals (a tiny value
  keeps two significant digits rather than printing as 0.0);
- latencies in milliseconds: about three significant digits (0.042, 1.25, 12.5, 125);
- percentages: "55.3%"; ratios as a change: "+12.3%"; a share estimated from samples with its
  bounds and what it rests on: "36% [31, 41] of 1,204 samples";
- byte sizes: binary units, labelled so ("1.5 GiB", "512 B");
- settings: memory settings in binary units ("128 MiB" when exact, else "5.9 GiB"), time
  settings as PostgreSQL's SHOW prints them ("5min", "200ms": units.py), others as they are;
- durations: "45s", "2.5s", "1m 30s", "2h";
- timestamps: UTC, always with the zone shown ("2026-11-25 18:24 UTC");
- text from users and programs (notes, tags, labels, errors): control characters shown
  escaped (`visible`), in the terminal and on pages alike;
- a command pgrig suggests (`pgrig db generate lab --script '/tmp/my dir/x.lua'`): every
  argument shell-quoted (`pgrig_command`), so that pasted it runs that one command.

This is a shared module (below every package): it imports only units.py.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from pgrig import units

MISSING = "-"

_BINARY = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))

# C0 and C1 control characters but newline and tab: a note, tag, name or error holding an
# escape sequence must not drive the terminal (colours, titles, cursor moves, hyperlinks, the
# bell); and the bidirectional controls (U+061C, U+200E/F, U+202A-202E, U+2066-2069), which
# reorder what follows them on a terminal and in a browser ("Trojan source").
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """`text` with control characters shown as \\xNN, bidi controls as \\uNNNN (idempotent)."""

    def shown(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return CONTROLS.sub(shown, text)


def page_text(value: object) -> object:
    """A template's output (Jinja's `finalize`): plain text with its controls shown escaped;
    markup the code built (markupsafe.Markup, a str subclass) and non-text as they are."""
    return visible(value) if type(value) is str else value


def is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float) and not math.isfinite(v))


def number(v: object, digits: int = 1) -> str:
    """1,234 / 123.4 / 0.0042: separators, whole from 1,000 up, `digits` decimals below."""
    if is_missing(v):
        return MISSING
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if v != 0 and abs(v) < 0.5 * 10**-digits:
        return f"{v:.2g}"
    return f"{v:,.{digits}f}"


def ms(v: float | None) -> str:
    """A latency in milliseconds, about three significant digits: 0.042, 1.25, 12.5, 125."""
    if is_missing(v):
        return MISSING
    assert v is not None
    a = abs(v)
    # the magnitude after rounding picks the digits: 9.996 is "10.0", not "10.00"
    if round(a, 1) >= 100:
        return f"{v:,.0f}"
    if round(a, 2) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}" if round(a, 3) >= 0.1 or v == 0 else f"{v:.3f}"


def percent(v: float | None, digits: int = 1) -> str:
    """55.3%."""
    return MISSING if is_missing(v) else f"{v:.{digits}f}%"


def share(
    pct: float | None,
    low: float | None = None,
    high: float | None = None,
    samples: float | None = None,
    noun: str = "samples",
) -> str:
    """A share with its bounds and count: "36% [31, 41] of 1,204 samples", "4.2% [3.1, 5.6]".
    Whole percents from 10% up, one decimal below; bounds and count only when known."""
    if is_missing(pct):
        return MISSING
    assert pct is not None
    known = [float(v) for v in (pct, low, high) if v is not None and not is_missing(v)]
    digits = 0 if min(known) >= 10 else 1
    text = f"{pct:.{digits}f}%"
    if not is_missing(low) and not is_missing(high):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    if not is_missing(samples):
        text += f" of {samples:,.0f} {noun}"
    return text


def points(d: float | None, low: float | None = None, high: float | None = None) -> str:
    """A change of a share in percentage points: "+5.1 [2.0, 8.3]"."""
    if is_missing(d):
        return MISSING
    text = f"{d:+.1f}"
    if not is_missing(low) and not is_missing(high):
        text += f" [{low:+.1f}, {high:+.1f}]"
    return text


def signed_pct(ratio: float | None) -> str:
    """A ratio as a change: 1.123 -> "+12.3%"."""
    if is_missing(ratio):
        return MISSING
    assert ratio is not None
    return f"{(ratio - 1) * 100:+.1f}%"


def size(v: float | None) -> str:
    """Bytes in binary units, labelled so: "512 B", "1.5 GiB"."""
    if is_missing(v):
        return MISSING
    assert v is not None
    for name, factor in _BINARY:
        if abs(v) >= factor:
            return f"{v / factor:,.1f} {name}"
    return f"{v:.0f} B"


# How a figure in each unit (record/figures.py) is written in a cell whose heading names the
# unit: one entry per unit, so a figure's text follows from its unit alone.
_IN_UNIT: dict[str, Callable[[float | None, int], str]] = {
    "": number,  # a count or a rate: TPS, transactions
    "%": number,
    "s": number,
    "x": number,  # a ratio
    "ms": lambda v, _digits: ms(v),
    "B": lambda v, _digits: size(v),
    "B/s": lambda v, _digits: size(v),
    # TPC-H's figures: queries per hour x scale factor (composite, power, throughput)
    "QphH@Size": number,
    "QppH@Size": number,
    "QthH@Size": number,
}


def in_unit(v: float | None, unit: str, digits: int = 1) -> str:
    """A figure's value in its unit for a table cell: "1,234", "12.5" (ms), "1.5 GiB"."""
    return _IN_UNIT[unit](v, digits)


def setting(entry: Mapping[str, object] | None, name: str = "", key: str = "setting") -> str:
    """A pg_settings snapshot entry's value (or its boot_val with key="boot_val") for people:
    memory in binary units ("128 MiB", "5.9 GiB"), the rest as SHOW prints it ("5min")."""
    if not entry or entry.get(key) is None:
        return MISSING
    value, unit = entry[key], units.entry_unit(entry)
    in_bytes = setting_bytes(value, unit)
    if in_bytes is None or in_bytes <= 0:
        return units.show_setting(value, unit, name)
    return exact_size(in_bytes)


def setting_bytes(value: object, unit: str | None) -> int | None:
    """A memory setting's value in bytes (None: not a memory setting, or not a number)."""
    per_unit = units.memory_bytes(unit or "")
    if per_unit is None:
        return None
    try:
        number_ = int(str(value))
    except ValueError:
        return None
    return number_ * per_unit


def exact_size(n: int) -> str:
    """Bytes in the largest binary unit they reach: whole when exact ("128 MiB"), else with
    one decimal as size() ("5.9 GiB")."""
    for name, factor in _BINARY:
        if n >= factor:
            return f"{n // factor:,} {name}" if n % factor == 0 else size(n)
    return f"{n} B"


def duration(seconds: float | None) -> str:
    """45 -> "45s", 2.5 -> "2.5s", 90 -> "1m 30s", 7200 -> "2h", -60 -> "-1m": the one way
    pgrig writes a duration (lists, summaries, study plans and progress, chart axes)."""
    if is_missing(seconds):
        return MISSING
    assert seconds is not None
    sign, s = ("-" if seconds < 0 else ""), abs(float(seconds))
    if s < 60:
        return sign + (f"{s:g}s" if s == int(s) else f"{s:.1f}s")
    m, sec = divmod(round(s), 60)
    h, m = divmod(m, 60)
    parts = [f"{h}h" if h else "", f"{m}m" if m else "", f"{sec}s" if sec else ""]
    return sign + " ".join(p for p in parts if p)


def timestamp(dt: datetime | None, seconds: bool = False) -> str:
    """UTC with the zone shown: "2026-11-25 18:24 UTC" (a naive time is taken as UTC, as the
    archive stores it)."""
    if dt is None:
        return MISSING
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")


# The style of a comparison's verdict in every table (CLI, web, reports): inconclusive and no
# verdict are muted.
VERDICT_STYLES = {"faster": "good", "slower": "bad", "equivalent": "neutral"}


def verdict_style(verdict: str | None) -> str:
    """The cell style of a verdict (inconclusive and no verdict: muted)."""
    return VERDICT_STYLES.get(verdict or "", "muted")


_VERSION = re.compile(r"\d+(?:\.\d+)*(?:devel|beta\d*|rc\d*)?")
ENGINE_NAMES = {"postgresql": "PostgreSQL"}


def version(text: str | None) -> str:
    """ "PostgreSQL 15.18 (Debian 15.18-1) on x86_64-pc-linux-gnu, ..." -> "15.18"."""
    if not text:
        return MISSING
    m = _VERSION.search(text)
    return m.group(0) if m else text


def engine(name: str | None, server_version: str | None) -> str:
    """ "PostgreSQL 15.18", also from version() strings."""
    label = ENGINE_NAMES.get(name or "", name or "")
    if not server_version:
        return label or MISSING
    return f"{label} {version(server_version)}".strip()


def text(v: object) -> str:
    """Any value by its kind: numbers by number(), missing as "-", the rest as str()."""
    if is_missing(v):
        return MISSING
    if isinstance(v, int | float) and not isinstance(v, bool):
        return number(v)
    return str(v)


def pgrig_command(*args: object, rest: str = "") -> str:
    """A `pgrig ...` command line to suggest, every argument shell-quoted (shlex): pasted into
    a shell it runs that one command, whatever a path, name or value holds (a space, `;`,
    `$(...)`, a quote). `rest` is what a person fills in (`...`, `--rows N`), left as written."""
    line = shlex.join(["pgrig", *(str(a) for a in args)])
    return f"{line} {rest}" if rest else line
