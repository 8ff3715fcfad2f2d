"""Value syntaxes shared by the CLI and the study files: durations, setting text, CPU lists,
NAME=VALUE pairs.

Each parser raises ValueError with a message that reads after a flag or a key path
("expected a duration like 15, '15s' or '2min' (got 'soon')").

Numbers are ASCII digits only, as PostgreSQL reads them: Python's int(), float(),
str.isdigit() and a regex's \\d also take other scripts' digits (int("٣٠٠") is 300), so every
parser of a number a user typed checks `ascii_digits` or matches [0-9], never \\d.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pgrig import units
from pgrig.errors import PgrigError

_NUMBER_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# A duration's units, for every flag and file that takes one (run, tune, studies): PostgreSQL's
# (units.TIME_UNITS: us ms s min h d), and "m" for minutes, which pgrig took before and its
# docs and tests still use ("--budget 30m"); a bare number is seconds. Other spellings ("3sec",
# "5mins") are refused listing these.
_UNIT_S: dict[str, float] = {"": 1.0, **units.TIME_UNITS, "m": 60.0}
DURATION_UNITS = f"a number of seconds, or one with a unit: {', '.join(units.TIME_UNITS)} (or m)"
INT64_MAX = 2**63 - 1  # ids, limits and offsets: the archive's BIGINT
MAX_CPU = 8191  # Linux's largest CPU number (NR_CPUS 8192): bounds a range like 0-99999999
CPU_COUNT_SUFFIX = "cores"  # --server-cpus 2cores: a count of cores, not CPU 2


def ascii_digits(text: str) -> bool:
    """Whether `text` is one or more of 0-9 (str.isdigit also says yes to "٣" and "²")."""
    return text.isascii() and text.isdigit()


def foreign_digits(text: str) -> bool:
    """Whether `text` is a number written with other scripts' digits ("٣٠٠", "1²", "-٣.٥"):
    digits to Python's str.isdigit but not to a program that reads 0-9 (PostgreSQL, pgbench,
    sysbench's Lua), which would take it as text or refuse it late."""
    parts = text.strip().lstrip("+-").split(".")
    return (
        len(parts) <= 2
        and all(p.isdigit() for p in parts)
        and not all(ascii_digits(p) for p in parts)
    )


def ascii_number(text: str) -> bool:
    """Whether float() may read `text` as a number a person typed: ASCII only, and no
    "inf"/"nan" (float() takes those, and "٣.٥" as 3.5)."""
    return bool(_NUMBER_RE.fullmatch(text.strip()))


def number_text(x: object) -> str:
    """3.0 -> "3", 2.5 -> "2.5", 0.001 -> "0.001": what a person would type."""
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def parse_duration(value: object) -> float:
    """Seconds from 15, 2.5, "15s", "2min", "500ms", "1h", "1d", "250us" (DURATION_UNITS)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like 15, '15s' or '2min' (got {value})")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and ascii_number(value):  # bare seconds as a flag gives them:
        return float(value)  # "-1" too, for the caller's range to refuse with its bounds
    if isinstance(value, str) and (a := units.amount(value)) and a.unit in _UNIT_S:
        return a.value * _UNIT_S[a.unit]
    raise ValueError(
        f"expected a duration like 15, '15s' or '2min': {DURATION_UNITS} (got {value!r})"
    )


PG_TIME_UNITS = ", ".join(units.TIME_UNITS)


def parse_server_time(value: object) -> float:
    """Seconds from a time the server is given (a query timeout, set as statement_timeout):
    PostgreSQL's time units only, case-sensitive as the server reads them ("500ms", "30s",
    "2min"; "2m" is not minutes to it), and a bare number is seconds, as every pgrig duration
    (statement_timeout's own bare number is milliseconds: pgrig converts, the user need not)."""
    shape = (
        f"a time like 30s or 2min (a bare number is seconds), in PostgreSQL's units {PG_TIME_UNITS}"
    )
    if isinstance(value, bool):
        raise ValueError(f"must be {shape} (got {value})")
    if isinstance(value, int | float):
        return float(value)
    text = str(value)
    if ascii_number(text):
        return float(text)
    a = units.amount(text)
    if a is None:
        raise ValueError(f"must be {shape} (got {text!r})")
    if a.unit not in units.TIME_UNITS:
        raise ValueError(
            f"must be {shape}: {a.unit!r} is not one of them, and they are case-sensitive as "
            f"the server reads them (2min, not 2m; got {text!r})"
        )
    return a.value * units.TIME_UNITS[a.unit]


def setting_text(value: object) -> str:
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
    raise ValueError(f"expected a string, number or boolean (got {value!r})")


def parse_cpu_list(text: str) -> list[int]:
    """ "0-3,6" -> [0, 1, 2, 3, 6]. Raises ValueError whose message is the bad part."""
    cpus: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        if not ascii_digits(lo) or (sep and not ascii_digits(hi)):
            raise ValueError(part)
        first = int(lo)
        last = int(hi) if sep else first
        if last < first or last > MAX_CPU:
            raise ValueError(part)
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def cpu_count(text: object) -> int | None:
    """ "2cores" -> 2; None when the text is not a count of cores (a CPU list, nothing)."""
    value = str(text).strip().lower() if text is not None else ""
    number = value.removesuffix(CPU_COUNT_SUFFIX)
    return int(number) if number != value and ascii_digits(number) else None


def check_cpus(value: object) -> str:
    """--server-cpus / --client-cpus: a CPU list ("0", "0-1,4", as taskset reads it) or a count
    of cores ("2cores"); whether this machine has them is the runner's check."""
    text = str(value).replace(" ", "") if isinstance(value, int | str) else ""
    if isinstance(value, bool) or not text:
        raise ValueError(f'expected CPUs such as "0-1", "0,2" or "2cores" (got {value!r})')
    if text.lower().endswith(CPU_COUNT_SUFFIX):
        if (cpu_count(text) or 0) < 1:
            raise ValueError(
                f"must be a whole number of cores >= 1, e.g. 2{CPU_COUNT_SUFFIX} (got {text!r})"
            )
        return text
    try:
        parse_cpu_list(text)
    except ValueError as e:
        raise ValueError(
            f"{str(e)!r} is not a CPU number or range "
            f"(a list such as 0-3,6, or a count such as 2{CPU_COUNT_SUFFIX})"
        ) from None
    return text


def check_int64(value: int, what: str) -> int:
    """An id, limit or offset the archive can hold (SQLite and PostgreSQL: signed 64 bits)."""
    if not -INT64_MAX - 1 <= value <= INT64_MAX:
        raise PgrigError(f"{what} must be at most {INT64_MAX} (got {value})")
    return value


def name_value(item: str) -> tuple[str, str] | None:
    """ "name = value" -> ("name", "value"), both stripped (the value may be empty); None when
    there is no name before an "=". The one reading of a NAME=VALUE input."""
    name, sep, value = item.partition("=")
    if not sep or not name.strip():
        return None
    return name.strip(), value.strip()


def name_values(
    items: Iterable[str] | None,
    flag: str = "",
    *,
    setting: bool = False,
    error: type[PgrigError] = PgrigError,
) -> dict[str, str]:
    """NAME=VALUE inputs as a mapping, wherever they are given (--set, --define, --tag, `env
    set`'s arguments): a name given twice is refused naming both, as PostgreSQL refuses a
    redundant option, never the last silently winning. Setting names (`setting`) are
    case-insensitive and kept in lower case, as in PostgreSQL (work_mem and WORK_MEM repeat),
    and a value in single quotes is read as postgresql.conf reads it: '%m ''x''' is %m 'x'.
    Other names (pgbench's and sysbench's variables, tags) are case-sensitive. `flag` names
    the input in messages; `error`: the exception a problem raises."""
    form = "NAME=VALUE" if setting else "key=value"
    out: dict[str, str] = {}
    given: dict[str, str] = {}
    for item in items or []:
        pair = name_value(item)
        if pair is None:
            raise error(f"{flag + ': ' if flag else ''}expected {form}, got {item!r}")
        name, value = pair
        if setting:
            name = name.lower()
            if len(value) >= 2 and value[0] == value[-1] == "'":
                value = value[1:-1].replace("''", "'")
        if name in given:
            first, second = (f"{flag} {x!r}" if flag else repr(x) for x in (given[name], item))
            raise error(
                f"{first} and {second} name the same {'setting' if setting else 'key'}: "
                "give each once"
            )
        given[name] = item
        out[name] = value
    return out


def setting_arg(name: str, value: str) -> str:
    """A setting as a NAME=VALUE argument name_values reads back exactly: quoted as in
    postgresql.conf only where it must be (spaces at either end, quotes around it)."""
    if value == value.strip() and not (len(value) >= 2 and value[0] == value[-1] == "'"):
        return f"{name}={value}"
    return f"{name}='{value.replace(chr(39), chr(39) * 2)}'"
