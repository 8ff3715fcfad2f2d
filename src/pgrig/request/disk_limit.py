"""A disk limit: the block I/O a server may do, as the kernel's throttle counts it.

`--disk-limit riops=N,wiops=N,rbps=SIZE,wbps=SIZE` (any subset, at least one): read and write
operations per second, read and write bytes per second. SIZE is a number of bytes or a
number with a unit B, kB, MB, GB or TB, 1024-based and spelled as in PostgreSQL's settings
(50MB is 52,428,800 bytes per second; 50mb is refused, as PostgreSQL refuses it); a fraction
is taken as PostgreSQL takes one for a size setting: rounded to its base unit, here whole
bytes (1.5MB is 1,572,864). Operations per second are whole numbers. Numbers are decimal,
in ASCII digits: what PostgreSQL would read otherwise (0x1F4 and 0500, hex and octal to its
integer parser) or not at all is refused, naming the forms taken. `none` says "no limit".
Parsed here, before anything is made; provision/server/disk_throttle.py puts a limit in force.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal

from pgrig import units
from pgrig.errors import PgrigError
from pgrig.request.problems import unknown_key
from pgrig.request.values import ascii_digits

KEYS = ("riops", "wiops", "rbps", "wbps")
IOPS_KEYS = ("riops", "wiops")
NONE = "none"
# The kernel keeps an IOPS limit in 32 bits (v1 blkio) and a byte rate in 64.
_IOPS_MAX = 2**32 - 2
_BPS_MAX = 2**63 - 1
# PostgreSQL's memory units, case-sensitive as its settings take them (units.MEMORY_UNITS); a
# bare number is bytes
_UNITS = {"": 1, **units.MEMORY_UNITS}
_UNIT_NAMES = tuple(
    sorted(((u, f) for u, f in units.MEMORY_UNITS.items() if f > 1), key=lambda u: -u[1])
)
# The least limit a server can live under: below it `env create` (CREATE DATABASE writes about
# 20 MB under the limit) or `env stop` (the shutdown checkpoint writes each of the new
# database's ~900 dirty pages on its own) waits past pgrig's 60 s bounds, or a new connection
# (its catalog reads, cold) times out. Measured with real environments under the blkio
# throttle (docs/disk-limits.md, bench/disk_limit_floor.py): wbps=256kB added 79 s to a
# create, wiops=10 made a stop take 72 s and wiops=2 one fail; riops=1 and rbps=1 left a cold
# connection to time out, riops=10 and rbps=64kB did not. The floor keeps each wait under
# about 30 s, with room over what was seen to work for reads.
FLOOR = {"riops": 30, "wiops": 30, "rbps": 256 * 1024, "wbps": 1024**2}
# what each key means, for people
MEANING = {
    "riops": "read operations per second",
    "wiops": "write operations per second",
    "rbps": "read bytes per second",
    "wbps": "write bytes per second",
}


class DiskLimitError(PgrigError):
    """A --disk-limit that cannot be: malformed, or no throttle to put it in force."""


@dataclass(frozen=True)
class DiskLimit:
    """Caps per second; None: that direction and unit is not limited."""

    riops: int | None = None
    wiops: int | None = None
    rbps: int | None = None
    wbps: int | None = None
    # each value as the user wrote it ("512000", "0.5MB"): what a refusal quotes back, not
    # the canonical text (500kB) they did not write; no part of the limit itself
    said: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def as_dict(self) -> dict[str, int]:
        """Only the keys that are set (env.json and the run record keep this)."""
        return {k: v for k in KEYS if (v := getattr(self, k)) is not None}

    def text(self) -> str:
        """The canonical spec: `riops=100,wbps=50MB` (what --disk-limit takes back)."""
        return ",".join(f"{k}={_value_text(k, v)}" for k, v in self.as_dict().items())

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> DiskLimit:
        """From env.json or a run record (keys checked: a damaged file is not guessed at)."""
        unknown = sorted(set(doc) - set(KEYS))
        if unknown:
            raise DiskLimitError(f"disk limit: {unknown[0]!r}: {unknown_key(unknown[0], KEYS)}")
        values = {}
        for k, v in doc.items():
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise DiskLimitError(f"disk limit: {k} must be a positive integer (got {v!r})")
            values[k] = v
        return cls(**values, said={})  # a record's numbers: nothing a person wrote


def parse(spec: str, flag: str = "--disk-limit") -> DiskLimit | None:
    """`riops=100,wbps=50MB` -> DiskLimit; `none` -> None. A problem is one line naming the
    flag, the key and what is allowed."""
    text = spec.strip()
    if text.lower() == NONE:
        return None
    if not text:
        raise DiskLimitError(f"{flag} is empty: give KEY=VALUE pairs ({', '.join(KEYS)}) or none")
    values: dict[str, int] = {}
    said: dict[str, str] = {}
    for part in text.split(","):
        key, sep, raw = part.strip().partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise DiskLimitError(
                f"{flag}: {part.strip()!r} is not KEY=VALUE (keys: {', '.join(KEYS)}; "
                "for example wiops=300,wbps=50MB)"
            )
        if key not in KEYS:
            raise DiskLimitError(f"{flag}: {key!r}: {unknown_key(key, KEYS)}")
        if key in values:
            raise DiskLimitError(f"{flag}: {key} is given twice")
        values[key] = _iops(flag, key, raw) if key in IOPS_KEYS else _bytes(flag, key, raw)
        said[key] = raw.strip()
    return DiskLimit(**values, said=said)


def check_floor(limit: DiskLimit | None, flag: str = "--disk-limit") -> None:
    """A limit a server must be created, started and stopped under: none below FLOOR, which
    is named in the refusal (a limit of wbps=1 left `env create` at CREATE DATABASE for
    minutes, with no word and no end)."""
    if limit is None:
        return
    low = [k for k, v in limit.as_dict().items() if v < FLOOR[k]]
    if low:
        k = low[0]
        shown = limit.said.get(k) or _value_text(k, getattr(limit, k))
        raise DiskLimitError(
            f"{flag}: {k}={shown} is below the floor of "
            f"{k}={_value_text(k, FLOOR[k])}: under less, creating, starting or stopping the "
            "server waits minutes (CREATE DATABASE writes about 20 MB, a shutdown checkpoint "
            "about 900 pages); floors: "
            + ", ".join(f"{key}={_value_text(key, v)}" for key, v in FLOOR.items())
        )


def _iops(flag: str, key: str, raw: str) -> int:
    text = raw.strip()
    sign = text[:1] if text[:1] in "+-" else ""
    if not ascii_digits(text[len(sign) :]):
        raise DiskLimitError(
            f"{flag}: {key} must be a whole number of {MEANING[key]} in decimal digits 0-9 "
            f"(got {text!r}; for example {key}=500)"
        )
    _no_octal(flag, key, text, text[len(sign) :])
    n = int(text)
    if n <= 0:
        raise DiskLimitError(f"{flag}: {key} must be > 0 (got {n}); `{flag} none` removes limits")
    if n > _IOPS_MAX:
        raise DiskLimitError(f"{flag}: {key} must be at most {_IOPS_MAX} (got {n})")
    return n


def _bytes(flag: str, key: str, raw: str) -> int:
    text = raw.strip()
    # a leading + as PostgreSQL's parsers take it (strtol, strtod), and as _iops does
    m = units.amount(text[1:] if text.startswith("+") else text)
    if m and m.unit not in _UNITS:
        raise DiskLimitError(
            f"{flag}: {key} must be a size in bytes per second: invalid unit {m.unit!r} "
            f"(got {text!r}); valid units are B, kB, MB, GB and TB, case-sensitive as in "
            f"PostgreSQL's settings (for example {key}=50MB)"
        )
    if not m:
        if text.startswith("-") or text == "0":
            raise DiskLimitError(f"{flag}: {key} must be > 0 (got {text!r})")
        raise DiskLimitError(
            f"{flag}: {key} must be a size in bytes per second: a decimal number (digits 0-9, "
            f"a fraction allowed) of bytes, or with B, kB, MB, GB or TB, 1024-based (got "
            f"{text!r}; for example {key}=50MB)"
        )
    _no_octal(flag, key, text, m.number)
    # as PostgreSQL converts a size setting (guc.c: rint of value x unit), to whole bytes; in
    # decimal, so no float rounds a large whole number
    exact = Decimal(m.number) * _UNITS[m.unit]
    n = int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))
    if n <= 0:
        rounded = " once rounded to whole bytes: 0" if exact > 0 else ""
        raise DiskLimitError(f"{flag}: {key} must be > 0 (got {text!r}{rounded})")
    if n > _BPS_MAX:
        raise DiskLimitError(f"{flag}: {key} is too large (got {text!r})")
    return n


def _no_octal(flag: str, key: str, text: str, number: str) -> None:
    """A whole number written with a leading 0 is octal to PostgreSQL's integer parser (guc.c
    parse_int: strtol base 0, so 0500 is 320; with a fraction, 010.5, it is decimal): refused
    rather than read either way."""
    if len(number) > 1 and number[0] == "0" and "." not in number:
        decimal = text.replace(number, number.lstrip("0") or "0", 1)
        raise DiskLimitError(
            f"{flag}: {key}={text} starts with 0, which PostgreSQL reads as octal (0500 is "
            f"320 to it): write the decimal number without the leading 0 ({key}={decimal})"
        )


def _value_text(key: str, v: int) -> str:
    if key in IOPS_KEYS:
        return str(v)
    for name, factor in _UNIT_NAMES:
        if v % factor == 0:
            return f"{v // factor}{name}"
    return str(v)


def describe(limit: DiskLimit | None) -> str:
    """For people: "wiops=300, wbps=50MB" or "none"."""
    return NONE if limit is None else limit.text().replace(",", ", ")
