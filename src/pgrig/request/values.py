"""Value syntaxes shared by the CLI and the study files: durations, setting text, CPU lists.

Each parser raises ValueError with a message that reads after a flag or a key path
("expected a duration like 15, '15s' or '2min' (got 'soon')").
"""

from __future__ import annotations

import re
from typing import Any

_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h)?\s*$")
_UNIT_S = {None: 1.0, "ms": 0.001, "s": 1.0, "sec": 1.0, "secs": 1.0, "m": 60.0, "min": 60.0}
_UNIT_S |= {"mins": 60.0, "h": 3600.0}
MAX_CPU = 8191  # Linux's largest CPU number (NR_CPUS 8192): bounds a range like 0-99999999


def number_text(x: Any) -> str:
    """3.0 -> "3", 2.5 -> "2.5", 0.001 -> "0.001": what a person would type."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def parse_duration(value: Any) -> float:
    """Seconds from 15, 2.5, "15s", "2min", "500ms", "1h"."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 15, '15s' or '2min' (got {value})")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and (m := _DURATION_RE.match(value)):
        return float(m.group(1)) * _UNIT_S[m.group(2)]
    raise ValueError(f"expected a duration like 15, '15s' or '2min' (got {value!r})")


def setting_text(value: Any) -> str:
    """A value as PostgreSQL setting text: booleans become on/off, numbers stay exact."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value).replace("inf", "Infinity")
    if isinstance(value, str):
        if "\n" in value or "\x00" in value:
            raise ValueError("a setting value must be on one line")
        return value
    raise ValueError(f"expected a string, number or boolean, got {type(value).__name__}")


def cpu_list(text: Any) -> list[int]:
    """ "0-3,6" -> [0, 1, 2, 3, 6] (syntax only: whether they exist is the runner's check)."""
    if isinstance(text, bool) or not isinstance(text, int | str) or not str(text).strip():
        raise ValueError(f'expected a CPU list such as "0-1" or "0,2" (got {text!r})')
    cpus: set[int] = set()
    for part in str(text).split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.strip().isdigit() or (sep and not hi.strip().isdigit()):
            raise ValueError(f"{part.strip()!r} is not a CPU number or range (e.g. 0-3,6)")
        first = int(lo)
        last = int(hi) if sep else first
        if last < first or last > MAX_CPU:
            raise ValueError(f"bad CPU range {part.strip()!r} (e.g. 0-3,6; CPUs 0-{MAX_CPU})")
        cpus.update(range(first, last + 1))
    return sorted(cpus)
