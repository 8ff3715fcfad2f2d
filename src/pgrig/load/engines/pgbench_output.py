"""What pgbench prints, turned into data: the final summary, -P progress lines, version, errors.

Tolerant of pgbench 14 to 18 (checked against captured real outputs in
tests/fixtures/pgbench/<major>/). A line that is absent gives None: nothing is ever derived or
defaulted here, so "not reported by this pgbench" stays distinguishable from 0.

Version differences handled:
- 14 has no "maximum number of tries" nor any failure line, writes "(0.000 %)" with a space,
  and its -P lines have no "failed" field.
- 15-17 per-script line: " - N transactions (P% of total, tps = X)" (N = processed).
- 18 per-script: " - N transactions (P% of total)" where N includes failures, then
  " - number of transactions actually processed: N (tps = X)".
- 13 and older: two "tps = ..." lines (including/excluding connections establishing).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"
_PCT = r"\(\s*[-+\d.naif]+\s*%\)"  # "(0.000%)", pgbench 14: "(0.000 %)"


def _float(text: str | None) -> float | None:
    """pgbench prints NaN/-nan for empty intervals: that is "no value", not a number."""
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) or math.isinf(value) else value


def _int(text: str | None) -> int | None:
    return int(text) if text is not None else None


# --------------------------------------------------------------------------------------------
# version

_VERSION_RES = (
    re.compile(r"pgbench \(PostgreSQL\) (\d+(?:\.\d+)?(?:devel|beta\d*|rc\d*)?)"),  # --version
    re.compile(r"^pgbench \((\d+(?:\.\d+)?(?:devel|beta\d*|rc\d*)?)", re.M),  # summary header
)


def parse_version(text: str) -> str | None:
    """pgbench's own version ("15.18", "18.6", "19devel") from `pgbench --version` output or
    from the first line of a summary ("pgbench (14.23, server 18.6)"); None if absent."""
    for rx in _VERSION_RES:
        m = rx.search(text)
        if m:
            return m.group(1)
    return None


def version_major(version: str | None) -> int | None:
    """18 for "18.6", 19 for "19devel"; None for None or an unrecognised string."""
    m = re.match(r"(\d+)", version or "")
    return int(m.group(1)) if m else None


def parse_server_version(text: str) -> str | None:
    """The server version pgbench reports when it differs from its own ("server 18.6")."""
    m = re.search(r"^pgbench \([^,)]+, server ([^)]+)\)", text, re.M)
    return m.group(1).strip() if m else None


# --------------------------------------------------------------------------------------------
# summary


@dataclass
class ScriptSummary:
    """One "SQL script N: name" block (printed with several scripts)."""

    number: int  # 1-based, as pgbench prints it; the log's script_no is number - 1
    name: str
    weight: int | None = None
    transactions: int | None = None  # processed (successful), all versions
    tps: float | None = None
    failed: int | None = None
    serialization_failures: int | None = None
    deadlock_failures: int | None = None
    retried: int | None = None
    total_retries: int | None = None
    skipped: int | None = None
    latency_limit_count: int | None = None
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None


@dataclass
class PgbenchSummary:
    pgbench_version: str | None = None
    server_version: str | None = None  # only when pgbench prints it (differs from its own)
    transaction_type: str | None = None  # "<builtin: select only>", "multiple scripts", path
    scaling_factor: int | None = None
    query_mode: str | None = None
    clients: int | None = None
    threads: int | None = None
    max_tries: int | None = None  # 15+
    duration_s: float | None = None  # -T
    transactions_per_client: int | None = None  # -t
    processed: int | None = None
    expected: int | None = None  # -t: "processed: 150/200" -> 200
    failed: int | None = None  # 15+
    serialization_failures: int | None = None  # --failures-detailed
    deadlock_failures: int | None = None  # --failures-detailed
    retried: int | None = None  # --max-tries != 1
    total_retries: int | None = None
    skipped: int | None = None  # -R with -L
    latency_limit_ms: float | None = None  # -L
    latency_limit_count: int | None = None  # transactions above the limit
    latency_avg_ms: float | None = None
    latency_stddev_ms: float | None = None
    lag_avg_ms: float | None = None  # -R
    lag_max_ms: float | None = None
    initial_connection_time_ms: float | None = None
    average_connection_time_ms: float | None = None  # -C
    tps: float | None = None
    tps_note: str | None = None  # "without initial connection time", "including reconnection times"
    scripts: list[ScriptSummary] = field(default_factory=list)
    aborted: bool = False  # "Run was aborted" seen (it is on stderr: pass it to parse_summary)
    complete: bool = False  # the tps line was printed (a killed pgbench prints no summary)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# (regex, field, converter) applied to top-level lines and, with the " - " prefix, to
# per-script lines (fields a ScriptSummary lacks are skipped there).
_COUNT = r"(\d+)"
_RULES: list[tuple[re.Pattern[str], tuple[tuple[str, Any], ...]]] = [
    (re.compile(r"transaction type: (.*)$"), (("transaction_type", str),)),
    (re.compile(r"scaling factor: (\d+)$"), (("scaling_factor", int),)),
    (re.compile(r"query mode: (\S+)$"), (("query_mode", str),)),
    (re.compile(r"number of clients: (\d+)$"), (("clients", int),)),
    (re.compile(r"number of threads: (\d+)$"), (("threads", int),)),
    (re.compile(r"maximum number of tries: (\d+)$"), (("max_tries", int),)),
    (re.compile(rf"duration: ({_NUM}) s$"), (("duration_s", _float),)),
    (
        re.compile(r"number of transactions per client: (\d+)$"),
        (("transactions_per_client", int),),
    ),
    (
        re.compile(r"number of transactions actually processed: (\d+)(?:/(\d+))?"),
        (("processed", int), ("expected", _int)),
    ),
    (re.compile(rf"number of failed transactions: {_COUNT}"), (("failed", int),)),
    (
        re.compile(rf"number of serialization failures: {_COUNT}"),
        (("serialization_failures", int),),
    ),
    (re.compile(rf"number of deadlock failures: {_COUNT}"), (("deadlock_failures", int),)),
    (re.compile(rf"number of transactions retried: {_COUNT}"), (("retried", int),)),
    (re.compile(rf"total number of retries: {_COUNT}"), (("total_retries", int),)),
    (re.compile(rf"number of transactions skipped: {_COUNT}"), (("skipped", int),)),
    (
        re.compile(rf"number of transactions above the ({_NUM}) ms latency limit: (\d+)"),
        (("latency_limit_ms", _float), ("latency_limit_count", int)),
    ),
    (re.compile(rf"latency average = ({_NUM}) ms"), (("latency_avg_ms", _float),)),
    (re.compile(rf"latency stddev = ({_NUM}) ms"), (("latency_stddev_ms", _float),)),
    (
        re.compile(rf"rate limit schedule lag: avg ({_NUM}) \(max ({_NUM})\) ms"),
        (("lag_avg_ms", _float), ("lag_max_ms", _float)),
    ),
    (
        re.compile(rf"initial connection time = ({_NUM}) ms"),
        (("initial_connection_time_ms", _float),),
    ),
    (
        re.compile(rf"average connection time = ({_NUM}) ms"),
        (("average_connection_time_ms", _float),),
    ),
]
_TPS = re.compile(rf"^tps = ({_NUM}) \((.*)\)\s*$")
_SCRIPT_HEAD = re.compile(r"^SQL script (\d+): (.*)$")
_SCRIPT_WEIGHT = re.compile(r"^ - weight: (\d+)")
# 14-17: " - 3042 transactions (30.6% of total, tps = 1524.9)"
# 18:    " - 2291 transactions (74.7% of total)"
_SCRIPT_TX = re.compile(rf"^ - (\d+) transactions \([^,)]*(?:, tps = ({_NUM}))?\)")
# 18: " - number of transactions actually processed: 1646 (tps = 546.769740)"
_SCRIPT_PROCESSED = re.compile(
    rf"^ - number of transactions actually processed: (\d+) \(tps = ({_NUM})\)"
)
_STATEMENTS = re.compile(r"^\s*(?:- )?statement latencies in milliseconds")
_ABORTED = "Run was aborted"


def parse_summary(stdout: str, stderr: str | None = None) -> PgbenchSummary:
    """Parse pgbench's final report (stdout). Pass stderr too to learn whether the run was
    aborted (pgbench says so on stderr). Unknown lines are ignored; absent lines give None."""
    s = PgbenchSummary(
        pgbench_version=parse_version(stdout), server_version=parse_server_version(stdout)
    )
    script: ScriptSummary | None = None
    in_statements = False
    for raw in stdout.splitlines():
        line = raw.rstrip()
        if not line:
            continue
        m = _SCRIPT_HEAD.match(line)
        if m:
            script = ScriptSummary(number=int(m.group(1)), name=m.group(2).strip())
            s.scripts.append(script)
            in_statements = False
            continue
        if _STATEMENTS.match(line):
            in_statements = True  # per-statement rows follow (-r); their SQL text is not ours
            continue
        if in_statements and (line.startswith((" ", "\t")) and not line.startswith(" - ")):
            continue
        in_statements = False
        m = _TPS.match(line)
        if m:
            note = m.group(2)
            # 13 and older print "including" then "excluding connections establishing":
            # keep the excluding one (the later line wins), as 14+ report only that.
            if s.tps is None or "including connections" not in note:
                s.tps, s.tps_note = _float(m.group(1)), note
            s.complete = True
            continue
        if line.startswith(" - ") and script is not None:
            _parse_script_line(script, line)
            continue
        if line.startswith(" "):
            continue
        script = None
        _apply_rules(s, line)
    text = stdout + ("\n" + stderr if stderr else "")
    s.aborted = _ABORTED in text
    return s


def _parse_script_line(script: ScriptSummary, line: str) -> None:
    m = _SCRIPT_WEIGHT.match(line)
    if m:
        script.weight = int(m.group(1))
        return
    m = _SCRIPT_PROCESSED.match(line)
    if m:  # 18: the authoritative processed count and tps
        script.transactions, script.tps = int(m.group(1)), _float(m.group(2))
        return
    m = _SCRIPT_TX.match(line)
    if m:
        if m.group(2) is not None:  # 14-17: processed, with tps
            script.transactions, script.tps = int(m.group(1)), _float(m.group(2))
        # 18 without tps: N counts failures too; the "actually processed" line follows
        return
    _apply_rules(script, line[3:])


def _apply_rules(target: PgbenchSummary | ScriptSummary, line: str) -> None:
    for rx, fields in _RULES:
        m = rx.match(line)
        if not m:
            continue
        for i, (name, conv) in enumerate(fields, start=1):
            if hasattr(target, name):
                setattr(target, name, conv(m.group(i)))
        return


# --------------------------------------------------------------------------------------------
# progress


@dataclass
class ProgressPoint:
    """One -P line: figures over the last progress interval."""

    elapsed_s: float  # seconds since start (or epoch seconds with --progress-timestamp)
    tps: float | None
    latency_ms: float | None
    stddev_ms: float | None
    failed: int | None = None  # 15+
    lag_ms: float | None = None  # -R
    skipped: int | None = None  # -R with -L
    retried: int | None = None  # --max-tries != 1
    retries: int | None = None


_PROGRESS = re.compile(
    rf"^progress: (?P<t>{_NUM}) s, (?P<tps>{_NUM}) tps, "
    rf"lat (?P<lat>{_NUM}) ms stddev (?P<sd>{_NUM})(?P<rest>.*)$",
    re.I,
)
_PROGRESS_EXTRA = {
    "failed": re.compile(r"(\d+) failed"),
    "lag_ms": re.compile(rf"lag ({_NUM}) ms", re.I),
    "skipped": re.compile(r"(\d+) skipped"),
    "retried": re.compile(r"(\d+) retried"),
    "retries": re.compile(r"(\d+) retries"),
}


def parse_progress_line(line: str) -> ProgressPoint | None:
    """`progress: 5.0 s, 24347.7 tps, lat 0.152 ms stddev 0.045, 0 failed[, lag 0.1 ms]
    [, 3 skipped][, 5 retried, 7 retries]` -> ProgressPoint; anything else -> None."""
    m = _PROGRESS.match(line.strip())
    if not m:
        return None
    elapsed = _float(m.group("t"))
    if elapsed is None:
        return None
    point = ProgressPoint(
        elapsed_s=elapsed,
        tps=_float(m.group("tps")),
        latency_ms=_float(m.group("lat")),
        stddev_ms=_float(m.group("sd")),
    )
    rest = m.group("rest")
    for name, rx in _PROGRESS_EXTRA.items():
        found = rx.search(rest)
        if found:
            value = found.group(1)
            setattr(point, name, _float(value) if name == "lag_ms" else int(value))
    return point


# --------------------------------------------------------------------------------------------
# errors

_OWN = re.compile(r"^pgbench: (?:error|fatal|detail|hint): ")
_OWN_ANY = re.compile(r"^pgbench: ")
_NOT_CONTINUATION = re.compile(
    r"^(?:progress: |pgbench: |pgbench \(|starting vacuum|"
    r"(?:WARNING|NOTICE|INFO|LOG|DEBUG\d?|ERROR|FATAL|PANIC):  )"
)


def error_lines(stderr: str) -> list[str]:
    """pgbench's own error messages from its stderr, line by line, exactly as printed.

    A message starts at "pgbench: error:" (or fatal:, detail:, hint:) and goes on over the
    lines that follow it until another message, a progress line or a server notice, e.g. a
    script syntax error with the offending line and the caret under it. Warnings, progress and
    relayed server notices ("WARNING:  terminating connection ...") are not included.
    """
    out: list[str] = []
    inside = False
    for raw in stderr.splitlines():
        line = raw.rstrip("\r")
        if _OWN.match(line):
            out.append(line)
            inside = True
        elif _OWN_ANY.match(line) or _NOT_CONTINUATION.match(line) or not line.strip():
            inside = False
        elif inside:
            out.append(line)
    return out
